// Start-up floor (bench/startup.ts): node:http alone, answering what the emulator's health answers.
import { createServer } from 'node:http';

createServer((_request, response) => {
  response.setHeader('content-type', 'application/json; charset=utf-8');
  response.end('{"status":"ok"}');
}).listen(Number(process.env.PORT), '127.0.0.1');
