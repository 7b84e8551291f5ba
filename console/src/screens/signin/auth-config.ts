/** The ways to sign in here (GET /auth/config), asked once per page load. */
import { useQuery } from '@tanstack/react-query';

interface AuthConfig {
  password: boolean;
  sso: boolean;
  sso_url?: string;
}

/** While unknown (or unreachable), the pages offer password and key, not SSO. */
export function useAuthConfig() {
  return useQuery({
    queryKey: ['auth', 'config'],
    queryFn: async (): Promise<AuthConfig> => {
      const res = await fetch('/auth/config', { headers: { accept: 'application/json' } });
      if (!res.ok) throw new Error(`GET /auth/config answered ${res.status}`);
      return (await res.json()) as AuthConfig;
    },
    staleTime: Infinity,
    retry: false,
  });
}
