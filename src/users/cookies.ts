/** The session cookie: HttpOnly, SameSite=Lax, Secure (and __Host-) when the public URL is https. */
import type { FastifyReply, FastifyRequest } from 'fastify';

const nameOf = (secure: boolean) => (secure ? '__Host-orrery_session' : 'orrery_session');

export const isSecure = (publicUrl: string): boolean => publicUrl.startsWith('https:');

export const readSessionCookie = (req: FastifyRequest, secure: boolean): string | undefined =>
  readCookie(req, nameOf(secure));

export function readCookie(req: FastifyRequest, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim() || undefined;
  }
  return undefined;
}

export function setSessionCookie(reply: FastifyReply, secure: boolean, value: string, maxAgeSeconds: number): void {
  reply.header(
    'set-cookie',
    `${nameOf(secure)}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`,
  );
}

export function clearSessionCookie(reply: FastifyReply, secure: boolean): void {
  setSessionCookie(reply, secure, '', 0);
}
