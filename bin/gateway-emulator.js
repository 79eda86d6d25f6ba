#!/usr/bin/env node
import module from 'node:module';

// Node 22.1+ keeps compiled code between runs, which makes start-up several times faster.
module.enableCompileCache?.();
await import('../dist/server.bundle.js');
