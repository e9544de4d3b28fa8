/** Sign in: the API token is sent once, as a bearer header, and exchanged for an HttpOnly session cookie. */
import { useState } from 'preact/hooks';
import { api, type ApiFailure, type SessionView } from '../api.ts';
import { ErrorNote } from './parts.tsx';

export function SignIn({ onSignedIn }: { onSignedIn: (s: SessionView) => void }) {
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
  return (
    <main class="signin">
      <h1>heapcap</h1>
      <form onSubmit={(e) => void submit(e)}>
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} required />
        <button type="submit" class="primary">
          Sign in
        </button>
        <p class="muted">A token from the tokens file (HEAPCAP_TOKENS_FILE). The console keeps only a session cookie; it can do what the token&apos;s scopes allow.</p>
        <ErrorNote error={failure} />
      </form>
    </main>
  );
}
