/** The console's shell: the session, the navigation and the view for the current route. */
import { useEffect, useState } from 'preact/hooks';
import { api, useCsrf, type ApiFailure, type SessionView } from './api.ts';
import { useRoute, href } from './router.ts';
import { SessionContext } from './session.tsx';
import { CaptureView } from './views/capture.tsx';
import { CapturesView } from './views/captures.tsx';
import { CompareView } from './views/compare.tsx';
import { HuntsView, HuntView } from './views/hunts.tsx';
import { SchedulesView } from './views/schedules.tsx';
import { ErrorNote } from './views/parts.tsx';
import { SignIn } from './views/signin.tsx';
import { TargetView } from './views/target.tsx';
import { TargetsView } from './views/targets.tsx';
import { WatchRulesView } from './views/watch-rules.tsx';

function View() {
  const { parts, params } = useRoute();
  const [section, id] = parts;
  if (section === 'targets' && id !== undefined) return <TargetView id={id} />;
  if (section === 'captures' && id !== undefined) return <CaptureView id={id} />;
  if (section === 'captures') return <CapturesView key={params.toString()} params={params} />;
  if (section === 'compare') return <CompareView params={params} />;
  if (section === 'hunts' && id !== undefined) return <HuntView id={id} />;
  if (section === 'hunts') return <HuntsView key={params.toString()} params={params} />;
  if (section === 'schedules') return <SchedulesView />;
  if (section === 'watch-rules') return <WatchRulesView />;
  return <TargetsView />;
}

export function App() {
  const [session, setSession] = useState<SessionView | null>(null);
  const [failure, setFailure] = useState<ApiFailure | undefined>();
  // The navigation marks the current section: read from the route, so it follows every hash change.
  const section = useRoute().parts[0] ?? '';
  // At phone width the navigation folds into a menu (styles.css); a new section closes it.
  const [menu, setMenu] = useState(false);
  useEffect(() => setMenu(false), [section]);
  const signIn = (s: SessionView): void => {
    useCsrf(s.csrfToken);
    setSession(s);
  };
  useEffect(() => {
    api<SessionView>('GET', '/v1/session').then(signIn, (err: ApiFailure) => setFailure(err));
  }, []);
  const signOut = async (): Promise<void> => {
    // An OIDC session answers with the provider's logout, to end its session there too.
    const out = await api<{ endSessionUrl: string } | null>('DELETE', '/v1/session');
    useCsrf(null);
    if (out !== null) return location.assign(out.endSessionUrl);
    setSession({ signedIn: false, mode: 'tokens', name: null, scopes: [], csrfToken: null, expiresAt: null, signIn: session?.signIn ?? { token: true, oidc: null } });
  };
  if (session === null) return failure === undefined ? <p class="muted">Loading…</p> : <ErrorNote error={failure} />;
  if (!session.signedIn) return <SignIn ways={session.signIn} onSignedIn={signIn} />;
  return (
    <SessionContext.Provider value={session}>
      <header class="top" data-menu={menu ? 'open' : 'closed'}>
        <a class="brand" href={href()}>
          heapcap
        </a>
        <button type="button" class="menu-toggle" data-testid="menu" aria-expanded={menu} aria-controls="main-nav" onClick={() => setMenu(!menu)}>
          Menu
        </button>
        <nav aria-label="main" id="main-nav">
          <a href={href('targets')} aria-current={section === 'targets' || section === '' ? 'page' : undefined}>
            Targets
          </a>
          <a href={href('captures')} aria-current={section.startsWith('captures') ? 'page' : undefined}>
            Captures
          </a>
          {session.scopes.includes('artifacts:read') && (
            <a href={href('hunts')} aria-current={section === 'hunts' ? 'page' : undefined}>
              Leak hunts
            </a>
          )}
          <a href={href('schedules')} aria-current={section === 'schedules' ? 'page' : undefined}>
            Schedules
          </a>
          <a href={href('watch-rules')} aria-current={section === 'watch-rules' ? 'page' : undefined}>
            Watch rules
          </a>
        </nav>
        <span class="who" data-testid="who">
          {session.name} <span class="muted">({session.scopes.join(', ')})</span>
        </span>
        {session.mode !== 'dev' && (
          <button type="button" data-testid="sign-out" onClick={() => void signOut()}>
            Sign out
          </button>
        )}
      </header>
      <main>
        <View />
      </main>
    </SessionContext.Provider>
  );
}
