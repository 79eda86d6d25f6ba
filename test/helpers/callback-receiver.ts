import { createServer } from 'node:http';

/** One callback as a receiver got it. */
export interface Received {
  task_id: string;
  task_status: string;
}

/**
 * A video callback target on loopback: every body it got (`bodies`, `received` their statuses)
 * and the statuses it acknowledged with a 2xx. `hold` keeps the first request of that status
 * unanswered (a slow target), until `close`.
 */
export async function callbackReceiver(hold?: string) {
  const bodies: Received[] = [];
  const received: string[] = [];
  const acknowledged: string[] = [];
  let held: (() => void) | undefined;
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => {
      raw += chunk;
    });
    req.on('end', () => {
      const body = JSON.parse(raw) as Received;
      bodies.push(body);
      received.push(body.task_status);
      if (body.task_status === hold && !held) {
        held = () => res.destroy();
        return;
      }
      res.end('ok', () => acknowledged.push(body.task_status));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    bodies,
    received,
    acknowledged,
    close: () => {
      held?.();
      return new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
