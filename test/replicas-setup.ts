import { type RedisServer, startRedis } from './helpers/redis.js';

/** One redis-server for the replicas run; every test app takes a key prefix of its own. */
let redis: RedisServer | undefined;

export async function setup(): Promise<void> {
  redis = await startRedis();
  process.env.GWEMU_TEST_STATE_URL = redis.url;
}

export async function teardown(): Promise<void> {
  await redis?.close();
}
