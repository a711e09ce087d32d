import { Module } from '@nestjs/common';
import { DisaggModule } from '../disagg/disagg.module';
import { ResponsesController } from './responses.controller';

/** `POST /v1/responses`; errors in the OpenAI shape through the OpenAI module's filter. */
@Module({
  imports: [DisaggModule],
  controllers: [ResponsesController],
})
export class ResponsesModule {}
