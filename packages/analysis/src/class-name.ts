/**
 * How nodes are grouped into classes: the rule of Chrome DevTools' Summary
 * view (`JSHeapSnapshotNode.className()`). Object and native nodes group by
 * their name (the constructor name; the same name string merges both types);
 * every other node type is one parenthesised group: hidden → `(system)`,
 * code → `(compiled code)`, and `(closure)`, `(string)`, `(concatenated string)`,
 * `(sliced string)`, `(array)`, `(number)`, `(regexp)`, `(symbol)`, `(bigint)`,
 * `(synthetic)`, `(object shape)` from the type's own name. DOM element nodes
 * group by tag (see {@link nameClass}).
 *
 * Recent DevTools versions show closures as `Function` and regexps as
 * `RegExp`, and prefix detached DOM nodes with `Detached `; heapcap keeps the
 * parenthesised groups (stable across DevTools versions) and reports detached
 * DOM nodes beside the table.
 */

/** The group name for a node type, or undefined when nodes of that type group by their own name. */
export function typeGroup(typeName: string): string | undefined {
  switch (typeName) {
    case 'object':
    case 'native':
      return undefined;
    case 'hidden':
      return '(system)';
    case 'code':
      return '(compiled code)';
    default:
      return `(${typeName})`;
  }
}

/** Per node type index: its group name, or undefined when grouped by name. */
export function typeGroups(nodeTypes: readonly string[]): (string | undefined)[] {
  return nodeTypes.map(typeGroup);
}

/**
 * The class of an object or native node from its name. Chromium names each
 * DOM element node after its tag and attributes (`<div id="d7" class="row">`,
 * measured on Chromium 156); heapcap groups those by tag (`<div>`), so ten
 * thousand leaked rows are one class, not ten thousand.
 */
export function nameClass(name: string): string {
  if (name.length > 2 && name.charCodeAt(0) === 0x3c /* < */ && name.endsWith('>')) {
    const space = name.indexOf(' ');
    if (space > 1) return `${name.slice(0, space)}>`;
  }
  return name;
}
