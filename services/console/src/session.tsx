/** The signed-in session the views read: who, and what its scopes allow. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Scope, SessionView } from './api.ts';

export const SessionContext = createContext<SessionView | null>(null);

/** True when the session's token holds `scope` (the console hides what it does not allow). */
export function useCan(scope: Scope): boolean {
  return useContext(SessionContext)?.scopes.includes(scope) ?? false;
}
