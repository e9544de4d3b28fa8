// Last line of defence against leftover processes: if a test process ends
// (a failed assertion before `after`, an uncaught error, Ctrl-C) while children
// it started are still alive, SIGKILL them synchronously. Chromium runs in a
// process group of its own, so a terminal's Ctrl-C would not reach it.
// Normal cleanup is still the caller's job (kill()/close()/stop()).

const killers = new Set<() => void>();
let installed = false;

function killAll(): void {
  for (const k of killers) {
    try {
      k();
    } catch {
      // The process is already gone; nothing else to do while exiting.
    }
  }
  killers.clear();
}

function install(): void {
  installed = true;
  process.once('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      killAll();
      // Keep the default behaviour (die by that signal) unless another listener
      // already handled it: ours is gone (once), so re-raising hits the default.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.once(signal, onSignal);
  }
}

/** Registers a synchronous last-resort killer; returns the function that unregisters it. */
export function onProcessExit(kill: () => void): () => void {
  if (!installed) install();
  killers.add(kill);
  return () => {
    killers.delete(kill);
  };
}
