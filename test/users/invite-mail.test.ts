/** Invitation mail over SMTP (ORRERY_SMTP_URL), received by a local SMTP server (smtp-server). */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { userSettingsOf } from '../../src/users/settings.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: invitation mail`, () => {
    let srv: TestServer;
    let smtp: SMTPServer;
    const received: Array<{ to: string[]; text: string }> = [];

    before(async () => {
      smtp = new SMTPServer({
        authOptional: true,
        disabledCommands: ['STARTTLS', 'AUTH'],
        onData(stream, session, done) {
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => {
            received.push({
              to: session.envelope.rcptTo.map((r) => r.address),
              text: Buffer.concat(chunks).toString(),
            });
            done();
          });
        },
      });
      await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
      const port = (smtp.server.address() as AddressInfo).port;
      srv = await startTestServer(dialect, {
        users: userSettingsOf({ ORRERY_SMTP_URL: `smtp://127.0.0.1:${port}`, ORRERY_SMTP_FROM: 'orrery@test.example' }),
      });
    });
    after(async () => {
      await srv?.close();
      await new Promise<void>((r) => smtp.close(() => r()));
    });

    it('an invitation is mailed with its link', async () => {
      const inv = await srv.api('POST', '/api/v1/account/invites', { email: 'mailme@example.com', role: 'reader' });
      assert.equal(inv.status, 200, JSON.stringify(inv.body));
      assert.equal(inv.body.mail, 'sent');
      const mail = received.find((m) => m.to.includes('mailme@example.com'));
      assert.ok(mail, 'the SMTP server got the mail');
      const secret = new URL(inv.body.link).hash.slice('#token='.length);
      // Quoted-printable may fold long lines: compare without soft line breaks.
      assert.ok(mail.text.replace(/=\r?\n/g, '').includes(secret), 'the mail holds the link');
      assert.match(mail.text, /From: orrery@test\.example/);
    });
  });
}
