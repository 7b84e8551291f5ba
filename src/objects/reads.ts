/**
 * What other features read of the objects' rows, so that none of them names the objects' tables:
 * each asks here, and the objects' store keeps the SQL.
 */
export { countObjects, embeddedObject, embeddedObjects, expiredObjects, typesOfObjects } from './store.ts';
export { inHistoryOf, revisionsInHistoriesOf, typeIsOneOf } from './table-conditions.ts';
