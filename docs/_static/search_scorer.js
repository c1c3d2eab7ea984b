/*
 * The site search's scorer (conf.py: html_search_scorer). Sphinx puts this file before its searchtools.js,
 * which then keeps this Scorer instead of its own; the weights below are the ones Sphinx's searchtools.js
 * declares for its default Scorer. Added: score(), so that at an equal match an executed example -- the pages
 * under examples/, which run the fix -- ranks above the reference tables and rule pages that only name it.
 * A symptom text pasted whole is found by the index entry of its fix page first (docs/_ext/guide/symptom_index.py);
 * this order also holds where Sphinx's rebuilt search index lacks those entries (sphinx-doc/sphinx#12599).
 */
var Scorer = {
  // result: [docname, title, anchor, descr, score, filename, kind]; returns the new score
  score: (result) => {
    const [docname, , , , score] = result;
    return docname.startsWith("examples/") ? score + 1 : score;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
