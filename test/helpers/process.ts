import { spawn } from 'node:child_process';
import { expect, vi } from 'vitest';

const LISTENING = /Server listening at (http:\S+)"/;

/**
 * Starts the server as a process (`command args`) with PORT=0 and JSON logs, keeping what it
 * prints; `url()` waits for its "listening" log line and reads the address from it.
 */
export function startProcess(command: string, args: string[], env: Record<string, string> = {}) {
  const child = spawn(command, args, {
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const url = async () => {
    await vi.waitFor(() => expect(stdout).toMatch(LISTENING), { timeout: 20_000 });
    return (LISTENING.exec(stdout) as RegExpExecArray)[1] as string;
  };
  return {
    child,
    exited,
    url,
    stdout: () => stdout,
    output: () => `stdout:\n${stdout}\nstderr:\n${stderr}`,
  };
}
