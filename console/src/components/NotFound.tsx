import { Link } from '@tanstack/react-router';
import { Page } from './Page.tsx';

export function NotFound() {
  return (
    <main id="main" className="main">
      <Page title="Not found">
        <p>
          There is no page here. <Link to="/runs">Go to the runs</Link>.
        </p>
      </Page>
    </main>
  );
}
