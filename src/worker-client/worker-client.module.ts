import { Module } from '@nestjs/common';
import { WorkerClient } from './worker-client';

/** The worker client; the HTTP session it is built on comes from the (global) HttpSessionModule. */
@Module({
  providers: [WorkerClient],
  exports: [WorkerClient],
})
export class WorkerClientModule {}
