/** Invitation mail through SMTP (ORRERY_SMTP_URL), when one is configured. */
import { createTransport, type Transporter } from 'nodemailer';

export type MailOutcome = 'sent' | 'failed' | 'not_configured';

export class Mailer {
  private readonly transport?: Transporter;
  constructor(
    private readonly smtp: { url: string; from: string } | undefined,
    private readonly onError: (err: unknown) => void,
  ) {
    // Bounded: a mail server that does not answer must not hold the admin's request for minutes.
    if (smtp)
      this.transport = createTransport({
        url: smtp.url,
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 20_000,
      });
  }

  async send(to: string, subject: string, text: string): Promise<MailOutcome> {
    if (!this.transport || !this.smtp) return 'not_configured';
    try {
      await this.transport.sendMail({ from: this.smtp.from, to, subject, text });
      return 'sent';
    } catch (err) {
      this.onError(err);
      return 'failed';
    }
  }

  close(): void {
    this.transport?.close();
  }
}
