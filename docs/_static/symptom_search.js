/*
 * How the site search splits a query: the English search language's js_splitter_code. Sphinx writes it into
 * _static/language_data.js after SYMPTOM_SHAPES, which docs/_ext/guide/symptom_search.py puts in front of it:
 * per error or warning that Lightning prints for the old hooks, the pages with its fix and each of its wordings as
 * the words Sphinx's search splits it into, null where the text names the code's own class.
 *
 * A reader pastes their own error: "NotImplementedError: Support for `training_epoch_end` has been removed in
 * v2.0.0. `MyNet` implements this method. ...". Sphinx keeps only the pages that hold every term of a query, and
 * MyNet is on no page of this site. So a query that holds a whole wording, or that a wording holds and that is at
 * least half of it (Sphinx's own rule for index entries), with any one to three words where the class name was,
 * is split into the words that matched: the class name and anything pasted around the error are left out.
 * symptomFixes then names the fix pages of that symptom, which the site's scorer (docs/_static/search_scorer.js)
 * ranks first. Any other query is split as Sphinx splits it, after leaving out the name qualifying a call
 * ("LitClassifier." before "training_epoch_end(").
 */

/** The fix pages of the symptom the last query matched (docnames, best first); empty when it matched none. */
var symptomFixes = [];

/** Sphinx's own splitter (the default splitQuery of its searchtools.js). */
const sphinxSplit = (query) =>
  query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu).filter((term) => term);

/*
 * Align the words of a wording, from position w, with the words of a query, from position q: a word matches
 * itself, a class name (null) one to three query words. Returns the positions [w, q] where `done(w, q)` first
 * holds, or null when no alignment reaches it.
 */
const alignWording = (wording, query, w, q, done) => {
  if (done(w, q)) return [w, q];
  if (w === wording.length || q === query.length) return null;
  if (wording[w] === null) {
    for (let take = 1; take <= 3 && q + take <= query.length; take++) {
      const end = alignWording(wording, query, w + 1, q + take, done);
      if (end) return end;
    }
    return null;
  }
  return wording[w] === query[q] ? alignWording(wording, query, w + 1, q + 1, done) : null;
};

/*
 * The symptom a query names: {fixes, terms, share}, where terms are the query's words that matched words of the
 * wording and share the part of the wording matched (1 when the query holds all of it); null when none matches.
 */
const findSymptom = (query) => {
  const words = sphinxSplit(query.toLowerCase());
  let best = null;
  const consider = (shape, wording, w0, w1, q0, q1) => {
    const share = (w1 - w0) / wording.length;
    if (best !== null && share <= best.share) return;
    const known = new Set(wording.filter((word) => word !== null));
    const terms = words.slice(q0, q1).filter((word) => known.has(word));
    best = { fixes: shape.fixes, terms, share };
  };
  for (const shape of SYMPTOM_SHAPES) {
    for (const wording of shape.wordings) {
      // the query holds the whole wording
      for (let q = 0; q < words.length; q++) {
        const end = alignWording(wording, words, 0, q, (w) => w === wording.length);
        if (end) {
          consider(shape, wording, 0, wording.length, q, end[1]);
          break;
        }
      }
      // the wording holds the whole query, and the query is at least half of it
      if (words.length < 3 || 2 * words.length < wording.length) continue;
      for (let w = 0; w < wording.length; w++) {
        const end = alignWording(wording, words, w, 0, (_, q) => q === words.length);
        if (end) {
          consider(shape, wording, w, end[0], 0, words.length);
          break;
        }
      }
    }
  }
  return best;
};

var splitQuery = (query) => {
  const symptom = findSymptom(query);
  symptomFixes = symptom === null ? [] : symptom.fixes;
  if (symptom !== null) return symptom.terms;
  return sphinxSplit(query.replace(/[\p{Letter}\p{Number}_]+\.(?=[\p{Letter}_][\p{Letter}\p{Number}_]*\()/gu, " "));
};
