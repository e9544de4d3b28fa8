/**
 * Sign in: through the company's OpenID provider (a link to /auth/oidc/login
 * that carries the page asked for, so a link from Slack lands there after
 * sign-in), and/or with an API token, sent once as a bearer header and
 * exchanged for an HttpOnly session cookie.
 */
import { useState } from 'preact/hooks';
import { api, type ApiFailure, type SessionView } from '../api.ts';
import { ErrorNote } from './parts.tsx';

export function SignIn({ ways, onSignedIn }: { ways: SessionView['signIn']; onSignedIn: (s: SessionView) => void }) {
  const [token, setToken] = useState('');
  const [failure, setFailure] = useState<ApiFailure | undefined>();
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    try {
      onSignedIn(await api<SessionView>('POST', '/v1/session', undefined, { authorization: `Bearer ${token.trim()}` }));
    } catch (err) {
      setFailure(err as ApiFailure);
    }
  };
  // The page asked for (a deep link's #/captures/ID): the server returns there after the provider.
  const back = location.hash.startsWith('#/') ? `?return=${encodeURIComponent(location.hash)}` : '';
  return (
    <main class="signin">
      <h1>heapcap</h1>
      {ways.oidc !== null && (
        <p>
          <a class="button primary" data-testid="sign-in-oidc" href={`${ways.oidc.url}${back}`}>
            Sign in with {ways.oidc.name}
          </a>
        </p>
      )}
      {ways.token && (
        <form onSubmit={(e) => void submit(e)}>
          <label for="token">API token</label>
          <input id="token" name="token" type="password" autocomplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} required />
          <button type="submit" class={ways.oidc === null ? 'primary' : undefined}>
            Sign in
          </button>
          <p class="muted">A token from the tokens file (HEAPCAP_TOKENS_FILE). The console keeps only a session cookie; it can do what the token&apos;s scopes allow.</p>
          <ErrorNote error={failure} />
        </form>
      )}
    </main>
  );
}
