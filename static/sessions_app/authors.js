// @ts-check
// Who wrote an entry (the API's `author` on each entry): how a card names it and the tree's
// "by <person>" filters, whose values are `author:<userId>`.
export const AUTHOR_FILTER = "author:";

// The card's words: "by eddie", "by eddie via laptop", "run started by eddie", "imported by eddie".
export function authorText(author) {
  if (!author) return "";
  if (author.imported || author.kind === "run") return author.label;
  return `by ${author.label}`;
}

// Whether a tree row's entry was written by the person the filter names (their own writes, their
// devices' and the runs they started).
export function authorMatches(record, filter) {
  const author = record && record.author;
  if (!author || author.userId === null || author.userId === undefined) return false;
  return String(author.userId) === filter.slice(AUTHOR_FILTER.length);
}

// The people who wrote the given records, by user id, with the name to show.
export function peopleOf(records) {
  const people = new Map();
  for (const record of records) {
    const author = record && record.author;
    if (author && author.userId !== null && author.userId !== undefined && author.name) people.set(String(author.userId), author.name);
  }
  return people;
}
