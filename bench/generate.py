"""Synthetic evaluation runs at any size, in the canonical JSONL of SPEC §3.

The rows follow the sample runs' shapes: a Ramayana bot with templates T1/T2/T3, several
providers per golden question, answers of ~900 characters with inline citations such as
`[Ayodhya-Kanda 31.25]` that mostly match the retrieved ids, five retrieved chunks per
response drawn from a corpus of ~10k chunks, recorded verdicts, and a realistic share of
trouble: unverifiable proper nouns and prices, low retrieval scores, refusals, citations
of shlokas that were not retrieved, misrouted questions, bad T3 answers that cite.

Every answer is assembled from sentence pools with row-specific names and numbers, so no
two rows are alike and nothing downstream can get away with caching by text. The output
is deterministic for a seed and streamed to disk (a 1M-row file is ~3 GB, never in memory);
the first N rows of a bigger file equal the file of N rows.

    python -m bench.generate --rows 10000 --out /tmp/bench/run_10k.jsonl [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

KANDAS = ("Bala", "Ayodhya", "Aranya", "Kishkindha", "Sundara", "Yuddha", "Uttara")
PROVIDERS = (("openai", "gpt-4o-2024-08-06"), ("claude", "claude-3-5-sonnet"), ("gemini", "gemini-1.5-pro"),
             ("mistral", "mistral-large-2407"))
CORPUS_SIZE = 10_000
RETRIEVED_PER_RESPONSE = 5

# Two-word proper nouns that the corpus contains (an answer naming them is verifiable).
TITLES = ("Lord", "Prince", "King", "Queen", "Sage", "Princess", "Mount", "River", "Lady", "Master")
PERSONS = ("Rama", "Lakshmana", "Bharata", "Shatrughna", "Dasharatha", "Kaikeyi", "Kausalya", "Sumitra",
           "Vishvamitra", "Vasishtha", "Hanuman", "Sugriva", "Vali", "Angada", "Jambavan", "Vibhishana",
           "Ravana", "Kumbhakarna", "Indrajit", "Mandodari", "Jatayu", "Sampati", "Maricha", "Shurpanakha",
           "Janaka", "Urmila", "Agastya", "Sharabhanga", "Chitrakuta", "Sarayu", "Godavari", "Malyavan")
# Two-word proper nouns no chunk contains: naming one is a potential hallucination.
FOREIGN_FIRST = ("Martin", "Alan", "Grace", "Oliver", "Sophia", "Henry", "Clara", "Victor", "Nadia", "Felix",
                 "Irene", "Lucas", "Marta", "Oscar", "Paula", "Simon")
FOREIGN_LAST = ("Keller", "Brooks", "Hartley", "Moreau", "Lindqvist", "Okafor", "Romano", "Fischer",
                "Whitaker", "Castillo", "Novak", "Sato", "Bennett", "Duval")
PRICES = ("${n}/month", "${n}.99", "${n}/year", "${n}.50 / mo", "${n}")

VERBS = ("counselled", "embraced", "rebuked", "praised", "consoled", "followed", "addressed", "honoured",
         "questioned", "protected", "blessed", "sought out", "answered", "defied", "welcomed", "mourned")
OBJECTS = ("the assembled ministers", "the grieving citizens", "the forest ascetics", "his younger brother",
           "the messenger from the south", "the ocean itself", "the vanara army", "the council of elders",
           "the charioteer Sumantra", "the hermits of the forest", "the people of the city",
           "the demons of the night", "the queen in her chamber", "the ferryman Guha")
ACTIVITIES = ("fasting", "penance", "travel through the forest", "silent vigil", "preparation for battle",
              "mourning", "deliberation", "wandering in the hills", "waiting by the shore")
PLACES = ("on the bank of the river", "at the edge of the forest", "before the palace gates",
          "in the hermitage", "on the slopes of the mountain", "beside the sacred fire", "at the ford")

CHUNK_SENTENCES = (
    "{n1} {verb} {obj} {place}, and {n2} stood beside the gathering in silence.",
    "when {n1} heard the words of {n2}, a long silence fell over {obj}.",
    "the poet describes how {n1} {verb} {obj} after {k} days of {act}.",
    "{n2} reminded {n1} of the vow made {place} and of the duty it carried.",
    "there were {k} lamps burning {place} when {n1} {verb} {obj}.",
)
FACT_SENTENCES = (
    "According to the text, {name} {verb} {obj} after {k} days of {act} [{cid}].",
    "The text states that {name} {verb} {obj} {place}, with {k} attendants as witnesses [{cid}].",
    "In this passage {name} {verb} {obj}, and the poet counts {k} lamps burning {place} [{cid}].",
    "We read that {name} {verb} {obj} while {k} sages recited hymns {place} [{cid}].",
    "The shloka mentions that {name} {verb} {obj} on the {k}th day of {act} [{cid}].",
    "Here the poet describes how {name} {verb} {obj} {place} [{cid}].",
    "Valmiki tells us that {name} {verb} {obj} once the {k} days of {act} had passed [{cid}].",
)
FILLERS = (
    "this episode prepares the ground for the events of the later books.",
    "the narrative returns to this moment several times, each time with a different emphasis.",
    "commentators have long noted how carefully the poet balances duty and affection here.",
    "the scene is brief, yet it carries much of the moral weight of the chapter.",
    "readers often contrast this passage with the rasher choices made elsewhere in the epic.",
    "the verse itself is short, but its consequences unfold over many chapters.",
)
INTERPRETATIONS = (
    "This can be interpreted as a lesson in restraint: duty is kept even at the cost of {k} years of hardship.",
    "One reading suggests that the poet wants us to weigh loyalty against personal desire.",
    "The episode symbolizes the tension between royal obligation and private grief.",
    "In other words, the scene reflects an ideal of dharma that later tradition elaborated at length.",
    "This suggests that obedience, for the poet, is a form of strength rather than weakness.",
    "It may be read as a meditation on what a promise costs the one who keeps it.",
)
OUT_OF_SCOPE_TOPICS = ("career advice", "stock tips", "a recipe for dinner", "a drawing of the heroes",
                       "an opinion on modern politics", "medical advice", "a poem about football",
                       "homework on calculus", "a summary of a film", "travel bookings")
REFUSALS = (
    "I appreciate your question, but {topic} falls outside my scope as a Ramayana interpreter.",
    "I'm sorry, but {topic} is beyond my scope: I am designed to discuss Valmiki's Ramayana.",
    "Thank you for asking. Unfortunately {topic} is not within my purview as a guide to the epic.",
    "I cannot help with {topic}; my purpose is to help you explore the text of the Ramayana.",
)
REDIRECTS = (
    "However, I can help with: the exile of the princes, the search for the lost queen, or the {k} verses "
    "on kingship in the second book. Would you like to explore any of these topics instead?",
    "Instead, I can walk you through the {k} chapters of the forest book, the alliance with the vanaras, "
    "or the ethics of the war. Would you like to start with one of them?",
    "I'd be happy to help with questions on the characters, the ethics of duty, or the structure of the "
    "seven books. Here are some topics you might enjoy: the bridge to the island, the {k} days of battle.",
)
REFUSAL_FILLERS = (
    "My purpose is to help you explore the text through careful, source-based reading.",
    "the epic has a great deal to say about duty, loyalty and exile, and those are questions I can answer well.",
    "each of the seven books offers a different angle on these themes.",
    "many readers begin with the second book, where the exile begins.",
)
HEDGES = ("I'm not sure the text settles this, but", "I do not have a verse that says so directly, yet",
          "I am not sure how literally to take it, but")
QUESTIONS_T1 = ("What did {n} do after {k} days of {act}?", "Whom did {n} address {place}?",
                "How does the text describe {n} in the {kanda} Kanda?", "Who stood beside {n} at the {k}th day?")
QUESTIONS_T2 = ("Why did {n} choose duty over affection?", "What does the episode of {n} teach about loyalty?",
                "How should we read the silence of {n} in the {kanda} Kanda?")
QUESTIONS_T3 = ("Can you give me {topic}?", "Please write {topic} about the heroes.",
                "What do you think about {topic}?", "I need {topic} urgently, can you help?")


@dataclass(frozen=True)
class Chunk:
    id: str
    text: str
    names: tuple[str, str]


def build_corpus(rng: random.Random, size: int = CORPUS_SIZE) -> list[Chunk]:
    """~10k shloka chunks with unique ids like 'Ayodhya-Kanda 31.25', each naming two proper nouns."""
    ids: set[str] = set()
    chunks = []
    while len(chunks) < size:
        cid = f"{rng.choice(KANDAS)}-Kanda {rng.randint(1, 130)}.{rng.randint(1, 60)}"
        if cid in ids:
            continue
        ids.add(cid)
        n1 = f"{rng.choice(TITLES)} {rng.choice(PERSONS)}"
        n2 = f"{rng.choice(TITLES)} {rng.choice(PERSONS)}"
        sentences = []
        for template in rng.sample(CHUNK_SENTENCES, 3):
            sentence = template.format(n1=n1, n2=n2, verb=rng.choice(VERBS), obj=rng.choice(OBJECTS),
                                       place=rng.choice(PLACES), k=rng.randint(2, 99), act=rng.choice(ACTIVITIES))
            sentences.append(sentence[0].upper() + sentence[1:])
        chunks.append(Chunk(cid, " ".join(sentences), (n1, n2)))
    return chunks


def _cap(sentence: str) -> str:
    return sentence[0].upper() + sentence[1:]


class RowMaker:
    """One golden question per `len(PROVIDERS)` rows; every row different text."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.corpus = build_corpus(self.rng)

    def rows(self, n: int) -> Iterator[dict[str, Any]]:
        produced = 0
        q = 0
        while produced < n:
            q += 1
            question = self._question(q)
            for provider, model in PROVIDERS:
                if produced >= n:
                    return
                produced += 1
                yield self._response(question, provider, model, produced)

    def _question(self, q: int) -> dict[str, Any]:
        rng = self.rng
        roll = rng.random()
        expected = "T1" if roll < 0.45 else "T2" if roll < 0.80 else "T3"
        k = rng.randint(2, 99)
        if expected == "T3":
            topic = rng.choice(OUT_OF_SCOPE_TOPICS)
            text = rng.choice(QUESTIONS_T3).format(topic=topic)
            focus: list[Chunk] = []
        else:
            focus = rng.sample(self.corpus, 3)
            pool = QUESTIONS_T1 if expected == "T1" else QUESTIONS_T2
            text = rng.choice(pool).format(n=focus[0].names[0], k=k, act=rng.choice(ACTIVITIES),
                                           place=rng.choice(PLACES), kanda=focus[0].id.split("-")[0])
            topic = ""
        gold = None
        if expected == "T1" and rng.random() < 0.8:
            gold = [[focus[0].names[0], focus[0].names[0].split()[1]]]
            if rng.random() < 0.3:
                gold.append({"aliases": [focus[1].names[1]], "supported": True})
        return {"question_id": f"q{q:07d}", "question": text, "expected_template": expected,
                "expected_routing": "out_of_scope" if expected == "T3" else "in_scope",
                "gold": gold, "focus": focus, "topic": topic}

    def _response(self, question: dict[str, Any], provider: str, model: str, row: int) -> dict[str, Any]:
        rng = self.rng
        expected = question["expected_template"]
        template = expected
        if rng.random() < 0.03:  # the router got it wrong
            template = rng.choice([t for t in ("T1", "T2", "T3") if t != expected])
        retrieved = self._retrieved(question, template)
        flags: list[str] = []
        if template == "T3":
            answer = self._t3_answer(question, retrieved, flags)
        else:
            answer = self._grounded_answer(question, template, retrieved, flags)
        record: dict[str, Any] = {
            "question_id": question["question_id"],
            "question": question["question"],
            "provider": provider,
            "model": model,
            "answer": answer,
            "expected_template": expected,
            "expected_routing": question["expected_routing"],
            "template": template,
            "classification": "out_of_scope" if template == "T3" else "in_scope",
            "retrieved": retrieved,
            "answerable": expected != "T3",
            "recorded_checks": self._recorded(template, flags, retrieved),
            "latency_ms": rng.randint(300, 9000),
        }
        if question["gold"] is not None:
            record["gold_answers"] = question["gold"]
        if rng.random() < 0.02:
            record["comment"] = f"Reviewer note {row}: checked against {rng.choice(KANDAS)}-Kanda, looks plausible."
        return record

    def _retrieved(self, question: dict[str, Any], template: str) -> list[dict[str, Any]]:
        rng = self.rng
        if template == "T3" and rng.random() < 0.5:
            return []
        focus = question["focus"]
        chunks = list(focus) if focus else []
        while len(chunks) < RETRIEVED_PER_RESPONSE:
            chunks.append(rng.choice(self.corpus))
        rng.shuffle(chunks)
        low = template == "T3" or rng.random() < 0.05  # nothing relevant found
        top = rng.uniform(0.05, 0.34) if low else rng.uniform(0.45, 0.92)
        scores = sorted((round(max(0.01, top - i * rng.uniform(0.0, 0.06)), 4) for i in range(len(chunks))),
                        reverse=True)
        return [{"id": c.id, "text": c.text, "score": s} for c, s in zip(chunks, scores, strict=True)]

    def _grounded_answer(
        self, question: dict[str, Any], template: str, retrieved: list[dict[str, Any]], flags: list[str]
    ) -> str:
        rng = self.rng
        by_id = {c.id: c for c in question["focus"]}
        cited = [by_id.get(item["id"]) or self._chunk(item["id"]) for item in retrieved] or question["focus"]
        parts = [_cap(rng.choice(FILLERS))]
        if question["gold"] and rng.random() < 0.9:
            first = question["focus"][0]
            parts.append(rng.choice(FACT_SENTENCES).format(
                name=first.names[0], verb=rng.choice(VERBS), obj=rng.choice(OBJECTS), k=rng.randint(2, 99),
                act=rng.choice(ACTIVITIES), place=rng.choice(PLACES), cid=first.id))
        n_facts = rng.randint(4, 5) if template == "T1" else 4
        for _ in range(n_facts):
            chunk = rng.choice(cited)
            cid = chunk.id
            if rng.random() < 0.015:  # a citation of a shloka that was not retrieved
                cid = rng.choice(self.corpus).id
                flags.append("citation_not_retrieved")
            parts.append(rng.choice(FACT_SENTENCES).format(
                name=rng.choice(chunk.names), verb=rng.choice(VERBS), obj=rng.choice(OBJECTS),
                k=rng.randint(2, 99), act=rng.choice(ACTIVITIES), place=rng.choice(PLACES), cid=cid))
            if rng.random() < 0.3:
                parts.append(_cap(rng.choice(FILLERS)))
        if template == "T2":
            for sentence in rng.sample(INTERPRETATIONS, 2):
                parts.append(sentence.format(k=rng.randint(2, 40)))
        roll = rng.random()
        if roll < 0.06:
            name = f"{rng.choice(FOREIGN_FIRST)} {rng.choice(FOREIGN_LAST)}"
            parts.append(f"the scholar {name} argued in {rng.randint(1890, 2020)} that this verse is a later addition.")
            flags.append("proper_noun")
        elif roll < 0.09:
            price = rng.choice(PRICES).format(n=rng.randint(5, 199))
            parts.append(f"an annotated edition of this book is available for {price} from most sellers.")
            flags.append("price")
        if rng.random() < 0.03:
            parts.insert(1, f"{rng.choice(HEDGES)} the reading below follows the critical edition.")
            flags.append("hedge")
        if rng.random() < 0.02:  # forgot to cite at all
            parts = [p.split(" [")[0] + "." if "[" in p else p for p in parts]
            flags.append("no_citation")
        return " ".join(_cap(p) for p in parts)

    def _t3_answer(self, question: dict[str, Any], retrieved: list[dict[str, Any]], flags: list[str]) -> str:
        rng = self.rng
        topic = question["topic"] or "that request"
        k = rng.randint(2, 24)
        if rng.random() < 0.12:  # a bad T3: it answers anyway, citing a shloka
            cid = retrieved[0]["id"] if retrieved else rng.choice(self.corpus).id
            flags.append("bad_t3")
            return (f"While {topic} isn't my specialty, the Ramayana teaches us about duty through the example "
                    f"of the prince [{cid}]. He prioritized his father's word over personal ambition, and "
                    f"after {k} years of exile he returned to rule. " + _cap(rng.choice(FILLERS)) + " "
                    + _cap(rng.choice(FILLERS)))
        parts = [rng.choice(REFUSALS).format(topic=topic), _cap(rng.choice(REFUSAL_FILLERS))]
        if rng.random() < 0.9:
            parts.append(rng.choice(REDIRECTS).format(k=k))
        else:
            flags.append("no_redirect")
        parts.append(_cap(rng.choice(REFUSAL_FILLERS)))
        parts.append(f"Ref {rng.randint(1000, 99999)}: thank you for your patience.")
        return " ".join(_cap(p) for p in parts)

    def _chunk(self, chunk_id: str) -> Chunk:
        if not hasattr(self, "_by_id"):
            self._by_id = {c.id: c for c in self.corpus}
        return self._by_id[chunk_id]

    def _recorded(self, template: str, flags: list[str], retrieved: list[dict[str, Any]]) -> dict[str, str]:
        """What a legacy evaluator would have exported: T3 fails cites_shlokas."""
        ok_retrieval = any(item["score"] >= 0.35 for item in retrieved)
        cites = template != "T3" or "bad_t3" in flags
        hallucination = bool({"proper_noun", "price", "citation_not_retrieved"} & set(flags))
        return {
            "routing_check": "PASS",
            "retrieval_check": "PASS" if ok_retrieval else "FAIL",
            "answers_question": "PASS",
            "cites_shlokas": "PASS" if cites and "no_citation" not in flags else "FAIL",
            "follows_template": "PASS" if cites else "FAIL",
            "no_hallucination": "FAIL" if hallucination else "PASS",
        }


def generate(path: str | Path, rows: int, *, seed: int = 7) -> dict[str, Any]:
    """Write `rows` responses to `path` (JSONL), streaming; return size and timing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    maker = RowMaker(seed)
    buffer: list[bytes] = []
    with path.open("wb", buffering=1 << 20) as out:
        for record in maker.rows(rows):
            buffer.append(orjson.dumps(record))
            if len(buffer) >= 2000:
                out.write(b"\n".join(buffer) + b"\n")
                buffer.clear()
        if buffer:
            out.write(b"\n".join(buffer) + b"\n")
    return {"path": str(path), "rows": rows, "bytes": path.stat().st_size,
            "seconds": round(time.perf_counter() - started, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    print(orjson.dumps(generate(args.out, args.rows, seed=args.seed)).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
