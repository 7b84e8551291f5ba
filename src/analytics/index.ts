/** Usage analytics: the service and its routes, for the composition root. */
export { AnalyticsService } from './service.ts';
export { analyticsRoutes } from './routes.ts';
