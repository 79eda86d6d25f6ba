import type { Clock, SetTimer } from '../platform/clock.js';
import type { GroupDescriptor, RefusedUploads } from '../platform/group.js';
import type { Ids } from '../platform/ids.js';
import { bodyString } from '../platform/request.js';
import type { Scheduler } from '../platform/scheduler.js';
import { CallbackGuard, type CallbackGuardOptions } from './callback-guard.js';
import {
  type CallbackLog,
  type CallbackOptions,
  Callbacks,
  DEFAULT_CALLBACK_OPTIONS,
} from './callbacks.js';
import { loadClip } from './clip.js';
import { videoGroupSpec } from './errors.js';
import { mediaRoutes } from './media-routes.js';
import { videoRoutes } from './routes.js';
import { type Courier, VideoService, type VideoSettings } from './service.js';
import type { Task, Tasks } from './tasks.js';

export interface VideoGroupOptions {
  clock: Clock;
  ids: Ids;
  scheduler: Scheduler;
  setTimer: SetTimer;
  settings: VideoSettings;
  /** Where callbacks may go: the emulator's own addresses, the allow-list. */
  guard: CallbackGuardOptions;
  publicBaseUrl: string | undefined;
  fixturesDir: string;
  /** Signs result URLs (read at each use). */
  secret: () => Buffer;
  /** Shared state: what a request of the media routes waits for first. */
  begin?: () => Promise<void> | undefined;
  /** Where tasks are held (the shared store); in memory unless given. */
  tasks?: (onEvict: (task: Task) => void) => Tasks;
  callbacks?: Partial<CallbackOptions>;
  /** Shared state: the callbacks on BullMQ, made from what they need of the group. */
  sharedCallbacks?: (
    guard: CallbackGuard,
    options: CallbackOptions,
    service: () => VideoService,
  ) => CallbackLog & Courier;
  /** What a refused request may still send (the media routes answer in the group's envelope). */
  refusedUpload: RefusedUploads['refusedUpload'];
}

export interface VideoGroup extends GroupDescriptor {
  /** The group's one door, also for the control surface. */
  service: VideoService;
  callbacks: CallbackLog;
}

/**
 * Group A, video tasks, mounted at `/videogen`, with its result files at `/media`.
 * @see https://kling.ai/document-api/apiReference/model/textToVideo
 */
export function videoGroup(options: VideoGroupOptions): VideoGroup {
  const { clock, ids, scheduler } = options;
  const guard = new CallbackGuard(options.guard);
  const settings = { ...DEFAULT_CALLBACK_OPTIONS, ...options.callbacks };
  const memory = new Callbacks(clock, scheduler, options.setTimer, guard, settings);
  const shared = options.sharedCallbacks?.(guard, settings, () => service);
  const callbacks: CallbackLog = shared ?? memory;
  const service: VideoService = new VideoService(
    options.settings,
    ids,
    scheduler,
    memory,
    options.secret,
    options.tasks,
    shared,
  );
  return {
    name: 'video',
    prefix: '/videogen',
    spec: videoGroupSpec,
    routes: videoRoutes({ video: service, publicBaseUrl: options.publicBaseUrl, guard }),
    public: {
      prefix: '/media',
      routes: mediaRoutes({
        ...(options.begin ? { begin: options.begin } : {}),
        video: service,
        clock,
        clip: loadClip(options.fixturesDir),
        errors: { refusedUpload: options.refusedUpload, setTimer: options.setTimer },
      }),
    },
    stores: [service, callbacks],
    facts: {
      model: (request) => bodyString(request.body, 'model_name'),
      prompt: (body) => ({ prompt: bodyString(body, 'prompt'), turn: undefined }),
    },
    service,
    callbacks,
  };
}
