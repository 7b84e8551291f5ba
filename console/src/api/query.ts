/**
 * The one TanStack Query client. Errors with a 4xx status are not retried; a 401 from any query or
 * mutation (the official client's calls included) signs the tab out, saying why.
 */
import { MutationCache, QueryCache, QueryClient } from '@tanstack/react-query';
import { errorMessage, errorStatus } from './errors.ts';
import { signOut } from './session.ts';

const on401 = (err: unknown) => {
  if (errorStatus(err) === 401) void signOut(errorMessage(err));
};

export const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError: on401 }),
  mutationCache: new MutationCache({ onError: on401 }),
  defaultOptions: {
    queries: {
      staleTime: 10_000,
      refetchOnWindowFocus: false,
      retry: (count, err) => {
        const s = errorStatus(err);
        return (s === undefined || s >= 500) && count < 2;
      },
    },
  },
});
