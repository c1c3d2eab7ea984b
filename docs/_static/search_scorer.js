/*
 * The site search's scorer (conf.py: html_search_scorer). Sphinx puts this file before its searchtools.js,
 * which then keeps this Scorer instead of its own; the weights below are the ones Sphinx's searchtools.js
 * declares for its default Scorer. Added: score(), so that
 *  - the pages that fix the error, warning or old hook the query names rank first, in their order (symptomFixes,
 *    set by the site's query splitter, docs/_static/symptom_search.js, which Sphinx runs on the query before it
 *    scores);
 *  - at an equal match, an executed example -- the pages under examples/, which run the fix -- ranks above the
 *    reference tables and rule pages that only name it.
 */
var Scorer = {
  // result: [docname, title, anchor, descr, score, filename, kind]; returns the new score
  score: (result) => {
    const [docname, , , , score] = result;
    const fix = typeof symptomFixes === "undefined" ? -1 : symptomFixes.indexOf(docname);
    if (fix >= 0) return score + Scorer.symptomFix - fix;
    return docname.startsWith("examples/") ? score + 1 : score;
  },
  // above any other result: an index entry that holds the whole query scores at most 100
  symptomFix: 1000,
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
