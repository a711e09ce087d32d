import { Module } from '@nestjs/common';
import { RoutingModule } from '../routing';
import { AdminChangeStore } from './admin-change-store';
import { AdminChangesRestorer } from './admin-changes-restorer.service';
import { AdminService } from './admin.service';
import { DrainRemover } from './drain-remover.service';
import { RequestStats } from './status-page/request-stats.service';

/** Admin operations and their state, always in the main app (it owns servers and routers). */
@Module({
  imports: [RoutingModule],
  providers: [AdminService, AdminChangeStore, DrainRemover, AdminChangesRestorer, RequestStats],
  exports: [AdminService, RequestStats],
})
export class AdminCoreModule {}
