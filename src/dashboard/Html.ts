/**
 * Html — HTML that is safe by construction. Every page of the dashboard is built with the `html`
 * tagged template: each interpolated value is escaped unless it is itself `Html` made by this
 * module, so a value read from the database (a payload holding `<script>`, a key holding
 * `"><img onerror=…>`) can only ever appear as text, in element content and in quoted
 * attributes alike.
 *
 * Invariant: `Html` values are made only by `html`, `join` and `trustedHtml`; `trustedHtml` takes
 * constant text written in this package, never data.
 *
 * Does not: sanitize HTML (it never lets markup from data through, so there is nothing to
 * sanitize) or build URLs (Links.ts does, and its results are escaped here like any text).
 */

/** A fragment of markup that has been escaped already. */
export class Html {
  readonly #text: string
  /** Use `html`, `join` or `trustedHtml` rather than this constructor. */
  constructor(text: string) {
    this.#text = text
  }
  /** The markup. */
  toString(): string {
    return this.#text
  }
}

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' }

/** `text` with every character that means something in HTML (content or quoted attribute) escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (character) => entities[character] as string)
}

// One interpolated value: markup stays, arrays are concatenated, absent values vanish, the rest is text.
function render(value: unknown): string {
  if (value instanceof Html) return value.toString()
  if (Array.isArray(value)) return value.map(render).join('')
  if (value === null || value === undefined || value === false) return ''
  return escapeHtml(String(value))
}

/** The tagged template: `html\`<td>${job.id}</td>\`` escapes `job.id`. */
export function html(strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>): Html {
  let text = strings[0] ?? ''
  for (let i = 0; i < values.length; i++) text += render(values[i]) + (strings[i + 1] ?? '')
  return new Html(text)
}

/** Fragments joined with `separator` (itself escaped when text). */
export function join(parts: ReadonlyArray<Html>, separator: Html | string = ''): Html {
  return new Html(parts.map(render).join(render(separator)))
}

/** Constant markup written in this package (a stylesheet, an icon); never pass data here. */
export function trustedHtml(constant: string): Html {
  return new Html(constant)
}
