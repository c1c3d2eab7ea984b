/*
 * How the site search splits a query (docs/_ext/build_mechanics/search_splitter.py hands it to Sphinx as the English
 * search language's js_splitter_code). Sphinx's own splitter, with one step before it: a pasted error names the
 * reader's own class before the hook it calls -- "TypeError: LitClassifier.training_epoch_end() missing 1 required
 * positional argument: 'outputs'". That class name is on no page of this site, and Sphinx keeps only the pages that
 * hold every term of a query, so the name qualifying a call (a word, then ".", then a called name) is left out.
 */
var splitQuery = (query) =>
  query
    .replace(/[\p{Letter}\p{Number}_]+\.(?=[\p{Letter}_][\p{Letter}\p{Number}_]*\()/gu, " ")
    .split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)
    .filter((term) => term); // remove remaining empty strings
