/** Events and webhook subscriptions (src/events): the shapes Vertesia's client reads and sends. */
import type { KeyRole } from '../auth/principal.ts';

export const EVENT_CATEGORIES = ['content', 'workflow', 'security', 'billing', 'system', 'external'] as const;
type EventCategory = (typeof EVENT_CATEGORIES)[number];

/** A platform event, as Vertesia's `PlatformEvent` (the fields Orrery fills). */
export interface PlatformEvent {
  event_id: string;
  root_event_id: string;
  hop_count: number;
  event_category: EventCategory;
  action: string;
  resource_type: string;
  resource_id: string;
  account_id: string;
  project_id: string;
  tenant_id: null;
  timestamp: string;
  source: 'orrery';
  resource_data?: Record<string, unknown>;
}

export interface EventFilter {
  event_category?: Array<EventCategory | '*'>;
  exclude_event_category?: EventCategory[];
  action?: string[];
  resource_type?: string[];
}

/** Whether a subscription's filter takes an event (an absent list takes everything). */
export function matches(f: EventFilter, e: PlatformEvent): boolean {
  const category = f.event_category;
  if (category?.length && !category.includes('*') && !category.includes(e.event_category)) return false;
  if (f.exclude_event_category?.includes(e.event_category)) return false;
  if (f.action?.length && !f.action.includes(e.action)) return false;
  if (f.resource_type?.length && !f.resource_type.includes(e.resource_type)) return false;
  return true;
}

/**
 * Vertesia's role names for `run_as_role`, as Orrery's roles: the subscription is sent only the
 * events its role may read. Roles that read nothing Orrery emits are refused.
 */
export const RUN_AS_ROLES: Record<string, KeyRole> = {
  owner: 'admin',
  admin: 'admin',
  manager: 'admin',
  developer: 'developer',
  application: 'executor',
  automation: 'executor',
  content_processor: 'executor',
  consumer: 'executor',
  executor: 'executor',
  reader: 'reader',
  support: 'reader',
  content_superadmin: 'reader',
  auditor: 'auditor',
};
