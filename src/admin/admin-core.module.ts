import { Module } from '@nestjs/common';
import { DisaggModule } from '../disagg/disagg.module';
import { AdminChangeStore } from './admin-change-store';
import { AdminChangesRestorer } from './admin-changes-restorer.service';
import { AdminService } from './admin.service';
import { DrainRemover } from './drain-remover.service';
import { RequestStats } from './status-page/request-stats.service';

/** Admin operations and their state, always in the main app (it owns servers and routers). */
@Module({
  imports: [DisaggModule],
  providers: [AdminService, AdminChangeStore, DrainRemover, AdminChangesRestorer, RequestStats],
  exports: [AdminService, RequestStats],
})
export class AdminCoreModule {}
