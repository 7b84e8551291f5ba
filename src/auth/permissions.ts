/**
 * Roles, permissions and the permission every authenticated route needs, in one place (issue 18).
 *
 * A key (and the JWTs issued for it) has one role; a role is a set of permission strings named
 * as Vertesia names them (`interaction:execute`, `run:read`, `content:write`, …). Every route of
 * the authenticated API context is listed in ROUTE_PERMISSIONS; `installPermissions` refuses to
 * start a server with a route that is not (so a new route cannot forget its permission), and
 * answers 403 naming the permission when the caller's role lacks it. Rules that depend on the
 * data (which project, which key) stay in the services.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Forbidden } from '../util/errors.ts';
import { table } from '../util/own.ts';
import type { KeyRole } from './principal.ts';

const PERMISSIONS = [
  'account:read',
  'project:read',
  'project:settings_write',
  'project:admin',
  'api_key:read',
  'api_key:create',
  'api_key:update',
  'api_key:delete',
  'environment:read',
  'environment:admin',
  'interaction:read',
  'interaction:write',
  'interaction:delete',
  'interaction:execute',
  'run:read',
  'run:write',
  'run:score',
  'content:read',
  'content:create',
  'content:write',
  'content:delete',
  'content:admin',
  'audit:read',
  'dataset:read',
  'dataset:write',
  'evaluator:read',
  'evaluator:write',
  'experiment:read',
  'experiment:write',
  'user:admin',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const READ: Permission[] = [
  'account:read',
  'project:read',
  'api_key:read',
  'environment:read',
  'interaction:read',
  'run:read',
  'content:read',
  'dataset:read',
  'evaluator:read',
  'experiment:read',
];

/** What each role may do. `admin` is also account-wide (every project); the others only their key's project. */
export const ROLE_PERMISSIONS: Record<KeyRole, ReadonlySet<Permission>> = {
  admin: new Set(PERMISSIONS),
  developer: new Set(PERMISSIONS.filter((p) => p !== 'project:admin' && p !== 'audit:read' && p !== 'user:admin')),
  executor: new Set<Permission>([
    'account:read',
    'project:read',
    'environment:read',
    'interaction:read',
    'interaction:execute',
    'run:read',
    'run:score',
    'content:read',
    'content:create',
  ]),
  reader: new Set(READ),
  auditor: new Set<Permission>([...READ, 'audit:read']),
};

export const can = (role: KeyRole, permission: Permission): boolean => ROLE_PERMISSIONS[role]?.has(permission) ?? false;

/** Whether a key of `caller`'s role may hold, give or manage a key of role `target`: every permission of the target is the caller's. */
export const roleWithin = (target: KeyRole, caller: KeyRole): boolean =>
  [...ROLE_PERMISSIONS[target]].every((p) => can(caller, p));

/** Needs only a valid key (exchanging it for a token). */
const ANY = 'authenticated' as const;
type Needed = Permission | typeof ANY;

/**
 * `METHOD /path` (as registered under /api/v1) → what the caller needs. Reading POSTs (search,
 * find, facets, export) need the read permission of what they read.
 */
export const ROUTE_PERMISSIONS: Record<string, Needed> = table<Needed>({
  'POST /token/issue': ANY,

  'GET /account': 'account:read',
  'GET /account/projects': 'account:read',
  'GET /limits': 'account:read',
  'GET /projects': 'project:read',
  'GET /projects/:id': 'project:read',
  'POST /projects': 'project:admin',
  'DELETE /projects/:id': 'project:admin',
  'PUT /projects/:id': 'project:settings_write',
  'PUT /projects/:id/configuration': 'project:settings_write',

  // People (src/users): the members list is filtered to the caller's project unless admin.
  'GET /account/members': 'account:read',
  'GET /users/:id': 'account:read',
  'GET /account/invites': 'user:admin',
  'POST /account/invites': 'user:admin',
  'DELETE /account/invites/:id': 'user:admin',
  'PUT /users/:id': 'user:admin',
  'DELETE /users/:id': 'user:admin',
  'PUT /users/:id/projects/:project': 'user:admin',
  'DELETE /users/:id/projects/:project': 'user:admin',
  'POST /users/:id/password-reset': 'user:admin',

  'GET /apikeys': 'api_key:read',
  'GET /apikeys/:id': 'api_key:read',
  'POST /apikeys': 'api_key:create',
  'PUT /apikeys/:id': 'api_key:update',
  'DELETE /apikeys/:id': 'api_key:delete',

  'GET /providers': 'environment:read',
  'GET /environments': 'environment:read',
  'GET /environments/:id': 'environment:read',
  'GET /environments/:id/models': 'environment:read',
  'POST /environments': 'environment:admin',
  'PUT /environments/:id': 'environment:admin',
  'PUT /environments/:id/config': 'environment:admin',
  'DELETE /environments/:id': 'environment:admin',
  'POST /environments/:id/models/enabled': 'environment:admin',
  'DELETE /environments/:id/models/enabled/:modelId': 'environment:admin',
  // Calls the model (and costs what executing does).
  'POST /environments/:id/embeddings': 'interaction:execute',

  'GET /prompts': 'interaction:read',
  'GET /prompts/:id': 'interaction:read',
  'GET /prompts/:id/versions': 'interaction:read',
  'GET /prompts/:id/forks': 'interaction:read',
  'GET /prompts/:id/interactions': 'interaction:read',
  'GET /prompts/options/:field': 'interaction:read',
  'POST /prompts/facets': 'interaction:read',
  'POST /prompts/:id/render': 'interaction:read',
  // Any template text, not a stored one: drafting, so a writer's right.
  'POST /prompts/render': 'interaction:write',
  'POST /prompts': 'interaction:write',
  'PUT /prompts/:id': 'interaction:write',
  'POST /prompts/:id/fork': 'interaction:write',
  'DELETE /prompts/:id': 'interaction:delete',

  'GET /interactions': 'interaction:read',
  'GET /interactions/:id': 'interaction:read',
  'GET /interactions/:id/versions': 'interaction:read',
  'GET /interactions/:id/forks': 'interaction:read',
  'GET /interactions/names': 'interaction:read',
  'GET /interactions/tags': 'interaction:read',
  'GET /interactions/versions/:name': 'interaction:read',
  'GET /interactions/resolve/:nameOrId': 'interaction:read',
  'GET /interactions/catalog': 'interaction:read',
  'GET /interactions/catalog/stored': 'interaction:read',
  'POST /interactions/endpoints': 'interaction:read',
  'POST /interactions/facets': 'interaction:read',
  'POST /interactions/export': 'interaction:read',
  'POST /interactions': 'interaction:write',
  'PUT /interactions/:id': 'interaction:write',
  'POST /interactions/:id/publish': 'interaction:write',
  'POST /interactions/:id/fork': 'interaction:write',
  'DELETE /interactions/:id': 'interaction:delete',

  'POST /execute': 'interaction:execute',
  'POST /execute/async': 'interaction:execute',
  'POST /agents/:id/signal/:signal': 'interaction:execute',
  'GET /mcp-servers': 'environment:read',
  'GET /mcp-servers/:id': 'environment:read',
  'POST /mcp-servers': 'environment:admin',
  'PUT /mcp-servers/:id': 'environment:admin',
  'DELETE /mcp-servers/:id': 'environment:admin',
  'POST /execute/rate-limit/request': 'interaction:execute',
  'POST /workflows/runs/:workflowId/:runId/actions/cancel': 'interaction:execute',

  'POST /events/subscriptions': 'project:settings_write',
  'GET /events/subscriptions': 'project:read',
  'GET /events/subscriptions/:id': 'project:read',
  'PUT /events/subscriptions/:id': 'project:settings_write',
  'DELETE /events/subscriptions/:id': 'project:settings_write',
  'GET /events/deliveries': 'project:read',
  'GET /events/notify-secret': 'project:settings_write',
  'POST /runs': 'interaction:execute',
  'POST /runs/tool-results': 'interaction:execute',
  'POST /runs/user-message': 'interaction:execute',
  'POST /datasets': 'dataset:write',
  'GET /datasets': 'dataset:read',
  'GET /datasets/:id': 'dataset:read',
  'PUT /datasets/:id': 'dataset:write',
  'DELETE /datasets/:id': 'dataset:write',
  'POST /datasets/:id/versions': 'dataset:write',
  'POST /datasets/:id/items': 'dataset:write',
  'GET /datasets/:id/items': 'dataset:read',
  'DELETE /datasets/:id/items/:itemId': 'dataset:write',
  'GET /datasets/:id/export': 'dataset:read',
  'POST /evaluators': 'evaluator:write',
  'GET /evaluators': 'evaluator:read',
  'GET /evaluators/:id': 'evaluator:read',
  'PUT /evaluators/:id': 'evaluator:write',
  'DELETE /evaluators/:id': 'evaluator:write',
  // Scores a run (and a judge executes its interaction).
  'POST /evaluators/:id/evaluate': 'run:score',
  // Starting or re-running one also needs interaction:execute and run:score (experiments/service.ts).
  'POST /experiments': 'experiment:write',
  'GET /experiments': 'experiment:read',
  'GET /experiments/:id': 'experiment:read',
  'GET /experiments/:id/items': 'experiment:read',
  'GET /experiments/:id/compare': 'experiment:read',
  'POST /experiments/:id/cancel': 'experiment:write',
  'POST /experiments/:id/items/:itemId/rerun': 'experiment:write',
  'DELETE /experiments/:id': 'experiment:write',
  // Online evaluation: evaluators' configuration (creating one also needs run:score, rules.ts).
  'POST /evaluation-rules': 'evaluator:write',
  'GET /evaluation-rules': 'evaluator:read',
  'GET /evaluation-rules/:id': 'evaluator:read',
  'PUT /evaluation-rules/:id': 'evaluator:write',
  'DELETE /evaluation-rules/:id': 'evaluator:write',

  'GET /runs': 'run:read',
  'GET /runs/:id': 'run:read',
  'GET /runs/:id/stream': 'run:read',
  'GET /runs/filter-options/:field': 'run:read',
  'POST /runs/facets': 'run:read',
  'POST /runs/find': 'run:read',
  'POST /runs/search': 'run:read',
  'GET /runs/export': 'run:read',
  'DELETE /runs/:id': 'run:write',
  'POST /runs/:id/scores': 'run:score',
  'GET /runs/:id/scores': 'run:read',
  'DELETE /runs/:id/scores/:scoreId': 'run:score',

  'GET /analytics/runs/summary': 'run:read',
  'GET /analytics/runs/time-series': 'run:read',
  'GET /analytics/runs/token-usage': 'run:read',
  'GET /analytics/runs/scores': 'run:read',
  'POST /cost/analytics': 'run:read',
  'POST /cost/analytics/global': 'project:admin',
  'GET /cost/model-prices': 'run:read',
  'POST /cost/run-price': 'run:read',

  'GET /audit-trail': 'audit:read',
  'GET /audit-trail/': 'audit:read',
  'POST /audit-trail/aggregate': 'audit:read',

  'GET /objects': 'content:read',
  'GET /objects/:id': 'content:read',
  'GET /objects/:id/text': 'content:read',
  'GET /objects/:id/content-source': 'content:read',
  'GET /objects/:id/renditions': 'content:read',
  'GET /objects/:id/renditions/:format': 'content:read',
  'GET /objects/:id/revisions': 'content:read',
  'GET /objects/:id/collections': 'content:read',
  'POST /objects/find': 'content:read',
  'POST /objects/count': 'content:read',
  'POST /objects/search': 'content:read',
  'POST /objects/facets': 'content:read',
  'POST /objects/export': 'content:read',
  'POST /objects/download-url': 'content:read',
  'POST /objects/upload-url': 'content:create',
  'POST /objects': 'content:create',
  'PUT /objects/:id': 'content:write',
  'PUT /objects/:id/embeddings/:type': 'content:write',
  'DELETE /objects/:id': 'content:delete',
  // The least any operation needs; update (content:write) and delete (content:delete) check theirs.
  'POST /operations': 'content:create',

  'GET /files/list': 'content:read',
  'GET /files/metadata': 'content:read',
  'POST /files/download-url': 'content:read',
  'POST /files/upload-url': 'content:create',
  'POST /files/bulk-upload-urls': 'content:create',
  'PUT /files/metadata': 'content:write',
  'POST /files/copy': 'content:write',
  'DELETE /files/*': 'content:delete',

  'GET /types': 'content:read',
  'GET /types/:id': 'content:read',
  'GET /types/name/:name': 'content:read',
  'POST /types/find': 'content:read',
  'GET /types/catalog': 'content:read',
  'GET /types/catalog/stored': 'content:read',
  'GET /types/catalog/resolve/:type': 'content:read',
  'POST /types': 'content:admin',
  'PUT /types/:id': 'content:admin',
  'DELETE /types/:id': 'content:admin',

  // orrery import (src/import): the links decide what a later import skips; run records are history.
  'GET /import/links': 'project:admin',
  'PUT /import/links': 'project:admin',
  'POST /import/runs': 'project:admin',

  'GET /embeddings/:type/status': 'content:read',
  'POST /embeddings/:type/enable': 'project:settings_write',
  'POST /embeddings/:type/disable': 'project:settings_write',
  'POST /embeddings/:type/recalculate': 'project:settings_write',

  'POST /collections/search': 'content:read',
  'POST /collections/facets': 'content:read',
  'GET /collections/:id': 'content:read',
  'GET /collections/:id/members': 'content:read',
  'POST /collections/:id/search': 'content:read',
  'POST /collections/:id/facets': 'content:read',
  'POST /collections/:id/children/search': 'content:read',
  'POST /collections': 'content:write',
  'PUT /collections/:id': 'content:write',
  'POST /collections/:id/members': 'content:write',
  'POST /collections/:id/children': 'content:write',
  'PUT /collections/:id/permissions': 'content:write',
  'POST /collections/:id/propagate-permissions': 'content:write',
  'POST /collections/:id/propagate-shared-props': 'content:write',
  'DELETE /collections/:id': 'content:delete',
});

const API_PREFIX = '/api/v1';

/** The route key of a registered route: `METHOD /path` without the API prefix. */
const routeKey = (method: string, url: string): string =>
  `${method} ${url.startsWith(API_PREFIX) ? url.slice(API_PREFIX.length) || '/' : url}`;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the caller's role must allow (from ROUTE_PERMISSIONS, set when the route is registered). */
    permission?: Needed;
  }
}

/**
 * In the authenticated context: every route gets its permission from the table (a route missing
 * from it stops the server from starting), and every request is checked after authentication.
 */
export function installPermissions(
  app: FastifyInstance,
  permissions: Record<string, Needed> = ROUTE_PERMISSIONS,
): void {
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat();
    // The HEAD twin of a GET route runs the GET handler: it needs what GET needs.
    const keys = methods.map((m) => routeKey(m === 'HEAD' ? 'GET' : m, route.url));
    const needed = keys.map((k) => permissions[k]);
    const missing = keys.find((_, i) => !needed[i]);
    if (missing)
      throw new Error(
        `route ${missing} has no permission: add it to ROUTE_PERMISSIONS in src/auth/permissions.ts (or its door's table)`,
      );
    if (new Set(needed).size > 1)
      throw new Error(
        `route ${keys.join(', ')} answers several methods with different permissions: register them apart`,
      );
    route.config = { ...route.config, permission: needed[0] };
  });
  // Right after authentication (hooks run in the order added): before the body is even read.
  app.addHook('onRequest', async (req) => checkPermission(req));
}

function checkPermission(req: FastifyRequest): void {
  const needed = req.routeOptions.config?.permission;
  // Closed by default: every route of this context got its permission when it was registered.
  if (!needed) throw new Forbidden(`${req.method} ${req.routeOptions.url} has no permission declared`);
  // `/token/issue` may authenticate from its body, after this hook: any valid key may do it.
  if (needed === ANY) return;
  if (!req.principal) throw new Forbidden('not authenticated');
  if (!can(req.principal.role, needed)) {
    throw new Forbidden(
      `this key's role (${req.principal.role}) does not have the permission ${needed}, which ${req.method} ${req.routeOptions.url} needs`,
      { permission: needed, role: req.principal.role },
    );
  }
}

/** For handlers whose permission depends on the body (bulk operations). */
export function requirePermission(role: KeyRole, permission: Permission, what: string): void {
  if (!can(role, permission))
    throw new Forbidden(`this key's role (${role}) does not have the permission ${permission}, which ${what} needs`, {
      permission,
      role,
    });
}
