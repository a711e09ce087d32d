import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { DisaggModule } from '../disagg/disagg.module';
import { OpenAiExceptionFilter } from '../common/errors/openai-exception.filter';
import { OpenAiController } from './openai.controller';

@Module({
  imports: [DisaggModule],
  controllers: [OpenAiController],
  providers: [{ provide: APP_FILTER, useClass: OpenAiExceptionFilter }],
})
export class OpenAiModule {}
