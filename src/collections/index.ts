/** Collections of content objects: the routes and the service the composition root wires. */
export { collectionRoutes } from './routes.ts';
export { CollectionService } from './service.ts';
