/**
 * Invitation mail through SMTP (ORRERY_SMTP_URL), when one is configured. nodemailer (about 40
 * files) is loaded with the first mail, so a server that sends none never loads it.
 */
import type { Transporter } from 'nodemailer';

export type MailOutcome = 'sent' | 'failed' | 'not_configured';

export class Mailer {
  private transport?: Promise<Transporter>;
  constructor(
    private readonly smtp: { url: string; from: string } | undefined,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** The SMTP transport, made at the first mail. Bounded: a mail server that does not answer must not hold the admin's request for minutes. */
  private transportOf(url: string): Promise<Transporter> {
    this.transport ??= import('nodemailer').then(({ createTransport }) =>
      createTransport({ url, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 }),
    );
    return this.transport;
  }

  async send(to: string, subject: string, text: string): Promise<MailOutcome> {
    if (!this.smtp) return 'not_configured';
    try {
      const transport = await this.transportOf(this.smtp.url);
      await transport.sendMail({ from: this.smtp.from, to, subject, text });
      return 'sent';
    } catch (err) {
      this.onError(err);
      return 'failed';
    }
  }

  close(): void {
    this.transport?.then(
      (t) => t.close(),
      () => {
        // A transport that could not be made has nothing to close.
      },
    );
  }
}
