/*
 * How the site search splits a query: the English search language's js_splitter_code. Sphinx writes it into
 * _static/language_data.js after two constants that docs/_ext/guide/symptom_search.py puts in front of it:
 *  - SYMPTOM_SHAPES: per error or warning that Lightning prints for the old hooks, the pages with its fix and each
 *    of its wordings as the words Sphinx's search splits it into, null where the text names the code's own class;
 *  - HOOK_TOPICS: per old hook shape of the registry, its fix page, the hook's name, the cache names migrated code
 *    gives its outputs (self.training_step_outputs) and the words of its signatures and replacement.
 *
 * A reader pastes their own error: "NotImplementedError: Support for `training_epoch_end` has been removed in
 * v2.0.0. `MyNet` implements this method. ...", or a part of it, or types a hook's name beside their own class
 * ("training_epoch_end MyNet"). Sphinx keeps only the pages that hold every term of a query, and MyNet is on no page
 * of this site. So:
 *  1. a query that holds a whole wording, or a run of one (any one to three words where the class name was) that is
 *     at least half of it (Sphinx's own rule for index entries) or four words or more around a hook's name, names
 *     that symptom: its terms are the words that matched, and symptomFixes its fix pages;
 *  2. any other query that names an old hook ("validation_epoch_end", "validation epoch end") or a cache name
 *     ("validation_step_outputs") names that hook's fix pages, those whose hook shares most words with the query
 *     first;
 *  3. the terms kept are the words the loaded search index knows (Sphinx's own matching: the stemmed word, or a
 *     longer word holding it), of three letters or more when there are such, and, when the query named a fix, held
 *     by its fix pages; when they find no page together, each word that still finds a page with those kept before
 *     it, in query order. A word of one or two letters would only mark pieces of words in the results.
 * The site's scorer (docs/_static/search_scorer.js) ranks symptomFixes first. A query that names nothing is split
 * as Sphinx splits it, without the words step 3 leaves out (the "LitClassifier" of "LitClassifier.training_step(").
 */

/** The fix pages of the symptom or hook the last query named (docnames, best first); empty when it named none. */
var symptomFixes = [];

/** Sphinx's own splitter (the default splitQuery of its searchtools.js). */
const sphinxSplit = (query) =>
  query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu).filter((term) => term);

/** Every old hook's name and every new one named in a signature: a run of a wording through one is specific. */
const symptomHookWords = new Set(
  HOOK_TOPICS.flatMap((topic) => [topic.hook, ...topic.words.filter((word) => /^on_|_end$|_start$/.test(word))]),
);

/*
 * The longest run of a wording from position w aligned with a query from position q: a word matches itself, a class
 * name (null) one to three query words. Returns {w, q, matched}: the ends of the run and how many of the wording's
 * words it matched.
 */
const longestRun = (wording, query, w, q) => {
  let best = { w, q, matched: 0 };
  if (w === wording.length || q === query.length) return best;
  if (wording[w] === null) {
    for (let take = 1; take <= 3 && q + take <= query.length; take++) {
      const end = longestRun(wording, query, w + 1, q + take);
      if (end.w > best.w) best = end;
    }
    return best;
  }
  if (wording[w] !== query[q]) return best;
  const end = longestRun(wording, query, w + 1, q + 1);
  return { w: end.w, q: end.q, matched: end.matched + 1 };
};

/*
 * The symptoms a query names: {fixes, terms}, the fix pages and the matched words of the symptoms with the best run
 * (the most words matched, then the largest part of the wording); null when no run is one (see the top of the file).
 */
const findSymptom = (words) => {
  let best = null;
  for (const shape of SYMPTOM_SHAPES) {
    for (const wording of shape.wordings) {
      const size = wording.filter((word) => word !== null).length;
      for (let w0 = 0; w0 < wording.length; w0++) {
        if (wording[w0] === null) continue;
        for (let q0 = 0; q0 < words.length; q0++) {
          if (wording[w0] !== words[q0]) continue;
          const run = longestRun(wording, words, w0, q0);
          const whole = w0 === 0 && run.w === wording.length;
          const hook = wording.slice(w0, run.w).some((word) => symptomHookWords.has(word));
          const named =
            whole || (run.matched >= 3 && 2 * run.matched >= size) || (run.matched >= 4 && hook);
          if (!named) continue;
          const rank = [run.matched, run.matched / size];
          const terms = words.slice(q0, run.q).filter((word) => wording.includes(word));
          const better =
            best === null || rank[0] > best.rank[0] || (rank[0] === best.rank[0] && rank[1] > best.rank[1]);
          if (better) best = { rank, fixes: [...shape.fixes], terms };
          else if (rank[0] === best.rank[0] && rank[1] === best.rank[1]) {
            best.fixes.push(...shape.fixes.filter((page) => !best.fixes.includes(page)));
            best.terms.push(...terms.filter((term) => !best.terms.includes(term)));
          }
        }
      }
    }
  }
  return best;
};

/** Whether the query's words hold `hook`, as one word or as its parts in a row ("validation epoch end"). */
const namesHook = (words, hook) => {
  if (words.includes(hook)) return true;
  const parts = hook.split("_");
  for (let q = 0; q + parts.length <= words.length; q++) {
    if (parts.every((part, i) => words[q + i] === part)) return true;
  }
  return false;
};

/*
 * The fix pages of the old hooks a query names (by name, or by a cache name of theirs): the pages of the hooks that
 * share most of the query's words first, then in registry order; empty when it names none.
 */
const findHookFixes = (words) => {
  const scored = [];
  HOOK_TOPICS.forEach((topic, order) => {
    if (!namesHook(words, topic.hook) && !topic.idioms.some((idiom) => words.includes(idiom))) return;
    const shared = new Set(words.filter((word) => topic.words.includes(word))).size;
    scored.push({ shared, order, fixes: topic.fixes });
  });
  scored.sort((a, b) => b.shared - a.shared || a.order - b.order);
  return [...new Set(scored.flatMap((topic) => topic.fixes))];
};

/*
 * The loaded search index's pages that hold a query word, as Sphinx's performTermsSearch finds them: the stemmed
 * word in the text or the titles, or, for a word of three letters or more that is no term itself, every term that
 * holds it. A Set of file numbers.
 */
const symptomPages = (() => {
  const cache = new Map();
  return (index, word) => {
    const stem = new Stemmer().stemWord(word.toLowerCase());
    if (cache.has(stem)) return cache.get(stem);
    const files = new Set();
    for (const terms of [index.terms, index.titleterms]) {
      const add = (found) => [].concat(found).forEach((file) => files.add(file));
      if (Object.prototype.hasOwnProperty.call(terms, stem)) add(terms[stem]);
      else if (stem.length > 2)
        Object.keys(terms).forEach((term) => term.includes(stem) && add(terms[term]));
    }
    cache.set(stem, files);
    return files;
  };
})();

/** The loaded search index, as Sphinx's Search.setIndex keeps it; an error naming it when it has no terms. */
const symptomIndex = () => {
  const index = typeof Search === "undefined" ? undefined : Search._index;
  if (!index || typeof index.terms !== "object" || !Array.isArray(index.docnames))
    throw new Error("symptom_search.js: Search._index holds no search index (has Sphinx's searchtools.js changed?)");
  return index;
};

/*
 * The terms to search for among `words` (step 3 at the top of the file): those the index knows, held by the pages
 * of `fixes` when there are any, and together found on at least one page. Sphinx leaves out stopwords and numbers.
 */
const keptTerms = (words, fixes) => {
  const index = symptomIndex();
  const searched = [...new Set(words)].filter((word) => !stopwords.has(word) && !/^\d+$/.test(word));
  // a word of one or two letters (the "i" and "e" of an "i.e.", the "ai" of an address) finds pieces of words only
  const long = searched.filter((word) => word.length > 2);
  const candidates = long.length ? long : searched.filter((word) => word.length > 1);
  let known = candidates.filter((word) => symptomPages(index, word).size > 0);
  const files = fixes.map((page) => index.docnames.indexOf(page)).filter((file) => file >= 0);
  if (files.length) {
    const onEvery = known.filter((word) => files.every((file) => symptomPages(index, word).has(file)));
    known = onEvery.length ? onEvery : known.filter((word) => symptomPages(index, word).has(files[0]));
  }
  // as Sphinx requires every term: keep each that still leaves a page holding them all
  let together = null;
  const kept = [];
  for (const word of known) {
    const pages = symptomPages(index, word);
    const both = together === null ? pages : new Set([...together].filter((file) => pages.has(file)));
    if (both.size === 0) continue;
    together = both;
    kept.push(word);
  }
  return kept;
};

var splitQuery = (query) => {
  const words = sphinxSplit(query.toLowerCase());
  const symptom = findSymptom(words);
  if (symptom !== null) {
    symptomFixes = symptom.fixes;
    return keptTerms(symptom.terms, symptomFixes);
  }
  symptomFixes = findHookFixes(words);
  const split = sphinxSplit(query);
  const kept = new Set(keptTerms(split.map((word) => word.toLowerCase()), symptomFixes));
  const terms = split.filter((word) => kept.has(word.toLowerCase()));
  // a query of words the index does not know is searched as typed: Sphinx then says it matched nothing
  return terms.length || symptomFixes.length ? terms : split;
};
