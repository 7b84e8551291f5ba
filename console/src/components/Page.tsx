/** The frame of a screen: a heading (the page's h1), optional actions on the right, the content. */
import { useEffect, type ReactNode } from 'react';

export function Page({
  title,
  actions,
  children,
  wide,
}: {
  title: string;
  actions?: ReactNode;
  children?: ReactNode;
  wide?: boolean;
}) {
  useEffect(() => {
    document.title = `${title} · Orrery`;
  }, [title]);
  return (
    <section className={wide ? 'page wide' : 'page'} aria-labelledby="page-title">
      <header className="page-header">
        <h1 id="page-title">{title}</h1>
        {actions && <div className="page-actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

/** Shown while a query loads. */
export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="loading" role="status">
      {label}
    </p>
  );
}
