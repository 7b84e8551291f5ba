/** The one TanStack Query client. Errors with a 4xx status are not retried. */
import { QueryClient } from '@tanstack/react-query';
import { errorStatus } from './errors.ts';

export const queryClient = new QueryClient({
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
