/**
 * The shared components at work (not linked from the navigation; tested by
 * test/console/shell.test.ts): a living example for screen authors. Owned by the foundation.
 */
import { useMemo, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { client } from '../../api/client.ts';
import { Page, Loading } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { DataTable, columnHelper } from '../../components/DataTable.tsx';
import { CodeEditor, type EditorLanguage } from '../../components/CodeEditor.tsx';
import { CappedText } from '../../components/CappedText.tsx';

interface Sample {
  id: string;
  name: string;
  status: 'completed' | 'failed';
  tokens: number;
}

const col = columnHelper<Sample>();
const columns = [
  col.accessor('name', { header: 'Name' }),
  col.accessor('status', {
    header: 'Status',
    cell: (c) => <span className={c.getValue() === 'failed' ? 'status-failed' : undefined}>{c.getValue()}</span>,
  }),
  col.accessor('tokens', { header: 'Tokens' }),
];

export function GalleryPage() {
  const rows = useMemo<Sample[]>(
    () =>
      Array.from({ length: 10_000 }, (_, i) => ({
        id: `r${i}`,
        name: `Row ${i + 1}`,
        status: i % 7 === 0 ? 'failed' : 'completed',
        tokens: i * 3,
      })),
    [],
  );
  const [picked, setPicked] = useState<string | undefined>();
  const [language, setLanguage] = useState<EditorLanguage>('handlebars');
  const [text, setText] = useState('Hello {{name}}! {{#each items}}{{this}}{{/each}}');
  // The official client in the browser.
  const envs = useQuery({ queryKey: ['environments'], queryFn: () => client().environments.list() });

  return (
    <Page title="Components">
      <h2>Official client</h2>
      {envs.isPending ? (
        <Loading />
      ) : envs.error ? (
        <ErrorBanner error={envs.error} />
      ) : (
        <p data-testid="env-count">{envs.data.length} environment(s)</p>
      )}
      <h2>Data table</h2>
      <p>{picked ? `Picked ${picked}` : 'Pick a row'}</p>
      <DataTable
        label="Sample rows"
        data={rows}
        columns={columns}
        getRowId={(r) => r.id}
        onRowClick={(r) => setPicked(r.name)}
        selectedId={picked && rows.find((r) => r.name === picked)?.id}
        height="20rem"
        rowClassName={(r) => (r.status === 'failed' ? 'failed' : undefined)}
      />
      <h2>Code editor</h2>
      <label htmlFor="gallery-language">Language</label>
      <select id="gallery-language" value={language} onChange={(e) => setLanguage(e.target.value as EditorLanguage)}>
        <option value="handlebars">handlebars</option>
        <option value="javascript">javascript</option>
        <option value="json">json</option>
        <option value="text">text</option>
      </select>
      <CodeEditor label="Template" value={text} onChange={setText} language={language} />
      <p data-testid="editor-length">{text.length} characters</p>
      <h2>Capped text</h2>
      <CappedText text={'x'.repeat(50_000)} limit={1000} filename="sample.txt" />
      <h2>Error banner</h2>
      <ErrorBanner error={{ message: 'Something went wrong' }} title="Example" />
    </Page>
  );
}
