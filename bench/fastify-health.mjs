// Start-up baseline (bench/startup.ts): bare Fastify, answering what the emulator's health answers.
import Fastify from 'fastify';

const app = Fastify();
app.get('/_emulator/health', async () => ({ status: 'ok' }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
