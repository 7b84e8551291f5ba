/**
 * A table whose body rows are virtualised (only what is on screen is in the DOM), so 100,000 rows
 * scroll smoothly. Real <table> semantics: each data row has the accessible role `row`; the header
 * row is in <thead>; the spacer rows that keep the scroll height are aria-hidden.
 *
 * Columns are TanStack Table (v9) column definitions made with `columnHelper<T>()`.
 */
import { useEffect, useRef, type ReactNode } from 'react';
import {
  columnVisibilityFeature,
  createColumnHelper,
  FlexRender,
  tableFeatures,
  useTable,
  type ColumnDef,
  type ColumnVisibilityState,
  type RowData,
} from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';

const tableFeatureSet = tableFeatures({ columnVisibilityFeature });
export type TableFeatureSet = typeof tableFeatureSet;
export type DataColumn<T extends RowData> = ColumnDef<TableFeatureSet, T, any>;

/** `const col = columnHelper<Run>(); col.accessor('status', { header: 'Status' })`. */
export const columnHelper = <T extends RowData>() => createColumnHelper<TableFeatureSet, T>();

export interface DataTableProps<T extends RowData> {
  data: T[];
  columns: DataColumn<T>[];
  /** Accessible name of the table (`aria-label`). */
  label: string;
  getRowId?: (row: T, index: number) => string;
  /** Column id → shown; missing ids are shown. */
  columnVisibility?: ColumnVisibilityState;
  onRowClick?: (row: T, index: number) => void;
  /** Id of the row to mark as selected (aria-selected). */
  selectedId?: string;
  /** Pixel height of a row (rows are fixed-height for smooth virtual scrolling). */
  rowHeight?: number;
  /** CSS height of the scrolling area. */
  height?: string;
  empty?: ReactNode;
  /** Called when the last rendered row is within 10 rows of the end (load more). */
  onNearEnd?: () => void;
  rowClassName?: (row: T) => string | undefined;
}

export function DataTable<T extends RowData>(props: DataTableProps<T>) {
  const {
    data,
    columns,
    label,
    rowHeight = 36,
    height = 'min(70vh, 900px)',
    onRowClick,
    selectedId,
    empty,
    onNearEnd,
    rowClassName,
  } = props;
  const table = useTable({
    features: tableFeatureSet,
    columns,
    data,
    getRowId: props.getRowId,
    state: { columnVisibility: props.columnVisibility ?? {} },
  } as any) as any;
  const scroller = useRef<HTMLDivElement>(null);
  const rows = table.getRowModel().rows as Array<{
    id: string;
    index: number;
    original: T;
    getVisibleCells: () => any[];
  }>;
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => rowHeight,
    overscan: 12,
  });
  const items = virtualizer.getVirtualItems();
  const last = items.at(-1);
  const lastIndex = last?.index ?? -1;
  useEffect(() => {
    if (onNearEnd && lastIndex >= 0 && lastIndex >= rows.length - 10) onNearEnd();
  }, [lastIndex, rows.length]); // deps chosen on purpose: not every value read
  const top = items[0]?.start ?? 0;
  const bottom = virtualizer.getTotalSize() - (last?.end ?? 0);
  const headerGroups = table.getHeaderGroups() as any[];
  const colCount = headerGroups[0]?.headers.length ?? 1;

  return (
    <div
      className="data-table"
      ref={scroller}
      style={{ maxHeight: height }}
      tabIndex={0}
      role="region"
      aria-label={`${label} (scrollable)`}
    >
      <table aria-label={label} aria-rowcount={rows.length + 1}>
        <thead>
          {headerGroups.map((g) => (
            <tr key={g.id}>
              {g.headers.map((h: any) => (
                <th
                  key={h.id}
                  scope="col"
                  style={h.column.columnDef.size ? { width: h.column.columnDef.size } : undefined}
                >
                  {h.isPlaceholder ? null : <FlexRender header={h} />}
                </th>
              ))}
            </tr>
          ))}
        </thead>
        <tbody>
          {top > 0 && (
            <tr aria-hidden="true" className="spacer">
              <td colSpan={colCount} style={{ height: top }} />
            </tr>
          )}
          {items.map((v) => {
            const row = rows[v.index];
            return (
              <tr
                key={row.id}
                data-row-id={row.id}
                aria-rowindex={v.index + 2}
                aria-selected={selectedId !== undefined ? selectedId === row.id : undefined}
                className={
                  [onRowClick ? 'clickable' : '', rowClassName?.(row.original) ?? ''].join(' ').trim() || undefined
                }
                style={{ height: rowHeight }}
                onClick={onRowClick ? () => onRowClick(row.original, v.index) : undefined}
              >
                {row.getVisibleCells().map((c: any) => (
                  <td key={c.id}>
                    <FlexRender cell={c} />
                  </td>
                ))}
              </tr>
            );
          })}
          {bottom > 0 && (
            <tr aria-hidden="true" className="spacer">
              <td colSpan={colCount} style={{ height: bottom }} />
            </tr>
          )}
        </tbody>
      </table>
      {rows.length === 0 && <div className="empty">{empty ?? 'Nothing to show.'}</div>}
    </div>
  );
}
