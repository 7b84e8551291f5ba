/**
 * A button acting on one row of a table: its visible label is short ("Remove"), its accessible
 * name says which row it acts on ("Remove ada@example.com").
 */
const STYLES = { secondary: 'secondary', link: 'link', danger: 'link danger-link' } as const;

export function RowAction(props: {
  label: string;
  name: string;
  onClick: () => void;
  disabled?: boolean;
  look?: keyof typeof STYLES;
}) {
  return (
    <button
      type="button"
      className={STYLES[props.look ?? 'secondary']}
      aria-label={props.name}
      disabled={props.disabled}
      onClick={props.onClick}
    >
      {props.label}
    </button>
  );
}
