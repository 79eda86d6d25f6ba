import { DEFAULT_SESSION, sessionOfOwner } from '../harness/session.js';
import type { VideoKind } from '../video/models.js';
import type { Task, Tasks } from '../video/tasks.js';
import { deleteMatching, type StateStore } from './redis.js';

/**
 * Keys under `STATE_PREFIX:task:` — `<id>`: the task as JSON; `ext:<owner>\n<external id>`: its
 * id; `order`: every task by creation (score: a counter); `idx:<owner>\n<kind>`: an owner's
 * tasks of a kind (the list endpoint's pages); `s:<session>`: a session's tasks; `proc`, `done`,
 * `faildone`: the times each task starts processing and ends (the failed ones apart), so the
 * tasks of each status are counted (metrics) without reading them; `forced`: forced statuses.
 */

/**
 * Removes a task and every index entry of it (Lua, put before the scripts that use it); returns
 * its JSON, or false when it was not held.
 */
const REMOVE_TASK = `
local function remove(p, id)
  local json = redis.call('GET', p .. id)
  if json then
    local task = cjson.decode(json)
    if task.externalId ~= '' then redis.call('DEL', p .. 'ext:' .. task.owner .. '\\n' .. task.externalId) end
    redis.call('ZREM', p .. 'idx:' .. task.owner .. '\\n' .. task.kind, id)
    local cut = string.find(task.owner, '\\0', 1, true)
    redis.call('SREM', p .. 's:' .. (cut and string.sub(task.owner, cut + 1) or 'default'), id)
  end
  redis.call('DEL', p .. id)
  redis.call('ZREM', p .. 'order', id)
  redis.call('ZREM', p .. 'proc', id)
  redis.call('ZREM', p .. 'done', id)
  redis.call('ZREM', p .. 'faildone', id)
  redis.call('HDEL', p .. 'forced', id)
  return json
end
`;

/**
 * KEYS: none (names are built from ARGV[1], the key prefix). ARGV: prefix, id, JSON, owner,
 * external id, kind, session, processing at, done at, failed (1/0), now, most tasks. Adds the
 * task unless its external id is taken for its owner (returns 0 then); past `most`, the oldest
 * finished task of the first 32 goes (or the oldest one). Returns 1.
 */
const CREATE = `${REMOVE_TASK}
local p, id = ARGV[1], ARGV[2]
if ARGV[5] ~= '' then
  if redis.call('SET', p .. 'ext:' .. ARGV[4] .. '\\n' .. ARGV[5], id, 'NX') == false then return 0 end
end
local seq = redis.call('INCR', p .. 'seq')
redis.call('SET', p .. id, ARGV[3])
redis.call('ZADD', p .. 'order', seq, id)
redis.call('ZADD', p .. 'idx:' .. ARGV[4] .. '\\n' .. ARGV[6], seq, id)
redis.call('SADD', p .. 's:' .. ARGV[7], id)
redis.call('ZADD', p .. 'proc', ARGV[8], id)
redis.call('ZADD', p .. 'done', ARGV[9], id)
if ARGV[10] == '1' then redis.call('ZADD', p .. 'faildone', ARGV[9], id) end
local now, most = tonumber(ARGV[11]), tonumber(ARGV[12])
while redis.call('ZCARD', p .. 'order') > most do
  local first = redis.call('ZRANGE', p .. 'order', 0, 31)
  local victim = first[1]
  for _, candidate in ipairs(first) do
    local forced = redis.call('HGET', p .. 'forced', candidate)
    local doneAt = redis.call('ZSCORE', p .. 'done', candidate)
    if forced == 'succeed' or forced == 'failed' or (not forced and doneAt and tonumber(doneAt) <= now) then
      victim = candidate
      break
    end
  end
  remove(p, victim)
end
return 1
`;

/** ARGV: prefix, owner, kind, id. A task of this owner and kind by id or external id. */
const FIND = `
local p = ARGV[1]
local json = redis.call('GET', p .. ARGV[4])
if json then
  local task = cjson.decode(json)
  if task.owner == ARGV[2] and task.kind == ARGV[3] then return json end
end
local id = redis.call('GET', p .. 'ext:' .. ARGV[2] .. '\\n' .. ARGV[4])
if not id then return nil end
json = redis.call('GET', p .. id)
if json and cjson.decode(json).kind == ARGV[3] then return json end
return nil
`;

/** ARGV: prefix, id, JSON before, JSON after, forced status. Compare and set. */
const FORCE = `
local p = ARGV[1]
if redis.call('GET', p .. ARGV[2]) ~= ARGV[3] then return 0 end
redis.call('SET', p .. ARGV[2], ARGV[4])
redis.call('ZREM', p .. 'proc', ARGV[2])
redis.call('ZREM', p .. 'done', ARGV[2])
redis.call('ZREM', p .. 'faildone', ARGV[2])
redis.call('HSET', p .. 'forced', ARGV[2], ARGV[5])
return 1
`;

/** ARGV: prefix, session. Removes the session's tasks; returns their JSON. */
const REMOVE_SESSION = `${REMOVE_TASK}
local p = ARGV[1]
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', p .. 's:' .. ARGV[2])) do
  local json = remove(p, id)
  if json then table.insert(out, json) end
end
redis.call('DEL', p .. 's:' .. ARGV[2])
return out
`;

/** ARGV: prefix, now. {submitted, processing, succeed, failed} without forced tasks, then forced. */
const COUNT = `
local p, now = ARGV[1], ARGV[2]
local started = redis.call('ZCOUNT', p .. 'proc', '-inf', now)
local submitted = redis.call('ZCARD', p .. 'proc') - started
local ended = redis.call('ZCOUNT', p .. 'done', '-inf', now)
local failed = redis.call('ZCOUNT', p .. 'faildone', '-inf', now)
return {submitted, started - ended, ended - failed, failed, redis.call('HVALS', p .. 'forced')}
`;

/**
 * Video tasks in the shared store: created, found, listed and counted by any replica; each
 * change one Lua step (an external id is taken once across replicas; MAX_TASKS holds for all).
 * A task's status is still derived from its timeline and the emulator clock.
 */
export class RedisTasks implements Tasks {
  private readonly p: string;

  constructor(
    private readonly store: StateStore,
    private readonly maxTasks: number,
  ) {
    this.p = store.key('task:');
  }

  async create(task: Task, now: number): Promise<boolean> {
    const { token: _, ...stored } = task;
    const processingAt = task.createdAt + task.queueMs;
    const created = await this.store.script(
      CREATE,
      0,
      this.p,
      task.id,
      JSON.stringify(stored),
      task.owner,
      task.externalId,
      task.kind,
      sessionOfOwner(task.owner),
      processingAt,
      processingAt + task.renderMs,
      task.outcome === 'failed' ? 1 : 0,
      now,
      this.maxTasks,
    );
    return created === 1;
  }

  async hasExternal(owner: string, externalId: string): Promise<boolean> {
    return (await this.store.redis.exists(`${this.p}ext:${owner}\n${externalId}`)) === 1;
  }

  async get(id: string): Promise<Task | undefined> {
    const json = await this.store.redis.get(`${this.p}${id}`);
    return json === null ? undefined : parse(json);
  }

  async find(owner: string, kind: VideoKind, id: string): Promise<Task | undefined> {
    const json = (await this.store.script(FIND, 0, this.p, owner, kind, id)) as string | null;
    return json === null ? undefined : parse(json);
  }

  async list(owner: string, kind: VideoKind, pageNum: number, pageSize: number) {
    const from = (pageNum - 1) * pageSize;
    const ids = await this.store.redis.zrevrange(
      `${this.p}idx:${owner}\n${kind}`,
      from,
      from + pageSize - 1,
    );
    return this.read(ids);
  }

  async force(id: string, forced: NonNullable<Task['forced']>): Promise<Task | undefined> {
    // Compare and set: a change made meanwhile by another replica makes it try again.
    for (let tries = 0; tries < 5; tries++) {
      const json = await this.store.redis.get(`${this.p}${id}`);
      if (json === null) return undefined;
      const before = parse(json);
      const after = JSON.stringify({ ...before, forced });
      const set = await this.store.script(FORCE, 0, this.p, id, json, after, forced.status);
      if (set === 1) return before;
    }
    throw new Error('state store: the task kept changing while it was forced');
  }

  async removeSession(session: string): Promise<Task[]> {
    const removed = (await this.store.script(REMOVE_SESSION, 0, this.p, session)) as string[];
    return removed.map(parse);
  }

  async clear(): Promise<void> {
    await deleteMatching(this.store, 'task:*');
  }

  async newest(limit: number, session?: string): Promise<{ size: number; tasks: Task[] }> {
    if (session === undefined) {
      const size = await this.store.redis.zcard(`${this.p}order`);
      const count = Math.min(limit, size);
      const ids = count === 0 ? [] : await this.store.redis.zrange(`${this.p}order`, -count, -1);
      return { size, tasks: await this.read(ids) };
    }
    const ids = await this.store.redis.smembers(`${this.p}s:${session ?? DEFAULT_SESSION}`);
    const tasks = (await this.read(ids)).sort((a, b) => a.createdAt - b.createdAt);
    return { size: tasks.length, tasks: tasks.length > limit ? tasks.slice(-limit) : tasks };
  }

  async countByStatus(now: number): Promise<Map<string, number>> {
    const [submitted, processing, succeed, failed, forced] = (await this.store.script(
      COUNT,
      0,
      this.p,
      now,
    )) as [number, number, number, number, string[]];
    const counts = new Map<string, number>([
      ['submitted', submitted],
      ['processing', processing],
      ['succeed', succeed],
      ['failed', failed],
    ]);
    for (const status of forced) counts.set(status, (counts.get(status) ?? 0) + 1);
    for (const [status, count] of counts) if (count === 0) counts.delete(status);
    return counts;
  }

  private async read(ids: string[]): Promise<Task[]> {
    if (ids.length === 0) return [];
    const all = await this.store.redis.mget(ids.map((id) => `${this.p}${id}`));
    return all.flatMap((json) => (json === null ? [] : [parse(json)]));
  }
}

function parse(json: string): Task {
  const task = JSON.parse(json) as Task & { callbackUrl: string | null };
  return { ...task, callbackUrl: task.callbackUrl ?? undefined };
}
