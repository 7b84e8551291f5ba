/**
 * Every route of the console, in one place. Screens own their files: the page component (loaded
 * lazily, so a screen's code, CodeMirror included, loads only when it is opened) and its
 * `search.ts` (the URL search params' type and validation). Adding a screen: add its folder and one
 * route here (console/README.md).
 *
 * In a screen: `const route = getRouteApi('/_app/runs')`, then `route.useSearch()`,
 * `route.useParams()`, `route.useNavigate()`.
 */
import {
  createRootRoute,
  createRoute,
  createRouter,
  lazyRouteComponent,
  Outlet,
  redirect,
} from '@tanstack/react-router';
import { ensureSignedIn, takeAfterSso } from './api/session.ts';
import { AppShell } from './components/AppShell.tsx';
import { NotFound } from './components/NotFound.tsx';
import { SignInPage, validateSignInSearch } from './screens/signin/SignInPage.tsx';
import { sameOriginRedirect } from './screens/signin/redirect.ts';
import { validateRunsSearch, validateRunDetailSearch } from './screens/runs/search.ts';
import { validateInteractionsSearch, validateInteractionDetailSearch } from './screens/interactions/search.ts';
import { validateEnvironmentsSearch } from './screens/environments/search.ts';
import { validateObjectsSearch, validateObjectDetailSearch } from './screens/objects/search.ts';
import { validateKeysSearch } from './screens/keys/search.ts';
import { validateDatasetsSearch, validateDatasetDetailSearch } from './screens/datasets/search.ts';
import { validateEvaluatorsSearch, validateEvaluatorDetailSearch } from './screens/evaluators/search.ts';
import { validateExperimentsSearch, validateExperimentDetailSearch } from './screens/experiments/search.ts';

const rootRoute = createRootRoute({ component: Outlet, notFoundComponent: NotFound });

const signInRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/signin',
  validateSearch: validateSignInSearch,
  component: SignInPage,
});

/** The pages of the links the API hands out: an invitation, a password reset (signed out). */
const acceptInviteRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/accept-invite',
  component: lazyRouteComponent(() => import('./screens/signin/LinkPages.tsx'), 'AcceptInvitePage'),
});
const resetPasswordRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/reset-password',
  component: lazyRouteComponent(() => import('./screens/signin/LinkPages.tsx'), 'ResetPasswordPage'),
});

/** Everything behind sign-in: the shell (navigation, sign out) around the screens. */
const appRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: '_app',
  beforeLoad: async ({ location }) => {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the router's redirects are thrown
    if (!(await ensureSignedIn())) throw redirect({ to: '/signin', search: { redirect: location.href } });
  },
  component: AppShell,
});

const indexRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/',
  beforeLoad: () => {
    // SSO comes back to `/`: the page asked for before it, when it is one of this console.
    const to = sameOriginRedirect(takeAfterSso(), window.location.origin);
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the router's redirects are thrown
    throw to ? redirect({ href: to }) : redirect({ to: '/runs' });
  },
});

const runsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'runs',
  validateSearch: validateRunsSearch,
  component: lazyRouteComponent(() => import('./screens/runs/RunsPage.tsx'), 'RunsPage'),
});

const runDetailRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'runs/$runId',
  validateSearch: validateRunDetailSearch,
  component: lazyRouteComponent(() => import('./screens/runs/RunDetailPage.tsx'), 'RunDetailPage'),
});

const interactionsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'interactions',
  validateSearch: validateInteractionsSearch,
  component: lazyRouteComponent(() => import('./screens/interactions/InteractionsPage.tsx'), 'InteractionsPage'),
});

const interactionDetailRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'interactions/$interactionId',
  validateSearch: validateInteractionDetailSearch,
  component: lazyRouteComponent(
    () => import('./screens/interactions/InteractionDetailPage.tsx'),
    'InteractionDetailPage',
  ),
});

const environmentsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'environments',
  validateSearch: validateEnvironmentsSearch,
  component: lazyRouteComponent(() => import('./screens/environments/EnvironmentsPage.tsx'), 'EnvironmentsPage'),
});

const objectsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'objects',
  validateSearch: validateObjectsSearch,
  component: lazyRouteComponent(() => import('./screens/objects/ObjectsPage.tsx'), 'ObjectsPage'),
});

const objectDetailRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'objects/$objectId',
  validateSearch: validateObjectDetailSearch,
  component: lazyRouteComponent(() => import('./screens/objects/ObjectDetailPage.tsx'), 'ObjectDetailPage'),
});

const keysRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'keys',
  validateSearch: validateKeysSearch,
  component: lazyRouteComponent(() => import('./screens/keys/KeysPage.tsx'), 'KeysPage'),
});

const datasetsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'datasets',
  validateSearch: validateDatasetsSearch,
  component: lazyRouteComponent(() => import('./screens/datasets/DatasetsPage.tsx'), 'DatasetsPage'),
});

const datasetDetailRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'datasets/$datasetId',
  validateSearch: validateDatasetDetailSearch,
  component: lazyRouteComponent(() => import('./screens/datasets/DatasetDetailPage.tsx'), 'DatasetDetailPage'),
});

const evaluatorsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'evaluators',
  validateSearch: validateEvaluatorsSearch,
  component: lazyRouteComponent(() => import('./screens/evaluators/EvaluatorsPage.tsx'), 'EvaluatorsPage'),
});

const evaluatorDetailRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'evaluators/$evaluatorId',
  validateSearch: validateEvaluatorDetailSearch,
  component: lazyRouteComponent(() => import('./screens/evaluators/EvaluatorDetailPage.tsx'), 'EvaluatorDetailPage'),
});

const experimentsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'experiments',
  validateSearch: validateExperimentsSearch,
  component: lazyRouteComponent(() => import('./screens/experiments/ExperimentsPage.tsx'), 'ExperimentsPage'),
});

const experimentDetailRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'experiments/$experimentId',
  validateSearch: validateExperimentDetailSearch,
  component: lazyRouteComponent(() => import('./screens/experiments/ExperimentDetailPage.tsx'), 'ExperimentDetailPage'),
});

const membersRoute = createRoute({
  getParentRoute: () => appRoute,
  path: 'members',
  component: lazyRouteComponent(() => import('./screens/members/MembersPage.tsx'), 'MembersPage'),
});

/** The shared components at work: an example for screen authors (not in the navigation). */
const galleryRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '_components',
  component: lazyRouteComponent(() => import('./screens/gallery/GalleryPage.tsx'), 'GalleryPage'),
});

const routeTree = rootRoute.addChildren([
  signInRoute,
  acceptInviteRoute,
  resetPasswordRoute,
  appRoute.addChildren([
    indexRoute,
    runsRoute,
    runDetailRoute,
    interactionsRoute,
    interactionDetailRoute,
    environmentsRoute,
    objectsRoute,
    objectDetailRoute,
    keysRoute,
    datasetsRoute,
    datasetDetailRoute,
    evaluatorsRoute,
    evaluatorDetailRoute,
    experimentsRoute,
    experimentDetailRoute,
    membersRoute,
    galleryRoute,
  ]),
]);

export const router = createRouter({ routeTree, defaultPreload: 'intent', scrollRestoration: true });

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}
