"""Write the sample runs shipped in data/ (SPEC §2-§5).

    python tools/make_sample_data.py [--out DIR]

Deterministic: no randomness, no network; every text is written by hand below.
The generated files are committed; this script exists to reproduce them.

- data/ramayana_golden.csv    the golden run as a wide CSV export of a review spreadsheet
                              (UTF-8 with BOM, CRLF), with the old evaluator's recorded verdicts
- data/ramayana_v2.jsonl      the same questions after a prompt change (canonical JSONL, no verdicts)
- data/clearpath_support.jsonl  a Clearpath support-bot run (profile clearpath)

tools/check_sample_data.py checks the story these files must tell.
"""

# ruff: noqa: E501  (hand-written sample texts are long lines)
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKS = (
    "routing_check",
    "retrieval_check",
    "answers_question",
    "cites_shlokas",
    "follows_template",
    "no_hallucination",
)
PROVIDERS = ("openai", "claude")
MODELS = {"openai": "gpt-4o-2024-08-06", "claude": "claude-3-5-sonnet-20241022"}

# ---------------------------------------------------------------------------------------------
# Shlokas (id exactly as cited inline -> English rendering)
# ---------------------------------------------------------------------------------------------
SHLOKAS = {
    # Bala
    "Bala-Kanda 1.10": "Narada said: he has broad shoulders, long arms reaching to his knees, a neck marked like a conch and a broad chin; he is of dark complexion and handsome.",
    "Bala-Kanda 4.2": "Valmiki composed the poem of twenty-four thousand verses in six books and an epilogue, and taught it to his disciples.",
    "Bala-Kanda 18.8": "When the sacrifice was complete and six seasons had passed, in the twelfth month the king's wishes came to fruition.",
    "Bala-Kanda 18.10": "On the ninth day of the bright fortnight of Chaitra, under the star Punarvasu, Queen Kausalya gave birth to Rama, the delight of the Ikshvaku race, the son of King Dasharatha, bearing all the auspicious marks.",
    "Bala-Kanda 18.13": "Kaikeyi gave birth to Bharata, and Sumitra bore the twins Lakshmana and Shatrughna.",
    "Bala-Kanda 66.8": "King Janaka said: this bow was entrusted by the gods to my ancestor Devarata; it is the bow with which Shiva once threatened the gods at the sacrifice of Daksha.",
    "Bala-Kanda 67.17": "Rama strung the great bow effortlessly and, as he drew it, the bow of Shiva broke in the middle with a sound like thunder.",
    "Bala-Kanda 67.22": "Janaka said: my daughter Sita shall be the wife of Rama, for the condition of strength I set has been met.",
    # Ayodhya
    "Ayodhya-Kanda 1.7": "King Dasharatha loved Rama above all his sons, for Rama was the foremost in virtue.",
    "Ayodhya-Kanda 11.20": "Kaikeyi said: remember, O king, the two boons you granted me long ago in the battle between the gods and the demons, when I saved your life.",
    "Ayodhya-Kanda 11.26": "Kaikeyi said: let Bharata be consecrated as prince regent with the very preparations made for Rama, and let Rama dwell in the Dandaka forest for fourteen years, wearing bark and deerskin.",
    "Ayodhya-Kanda 12.3": "Hearing these cruel words, King Dasharatha was stunned and fell senseless, like a tree struck by lightning.",
    "Ayodhya-Kanda 18.28": "Rama said to Kaikeyi: at my father's word I would leap into fire, drink deadly poison, or sink into the ocean.",
    "Ayodhya-Kanda 19.7": "Rama said: so be it; to keep the king's promise I shall go to the forest, wearing matted hair and bark garments.",
    "Ayodhya-Kanda 19.20": "Rama said: I have no wish for wealth; know that I am devoted to dharma, like the sages.",
    "Ayodhya-Kanda 20.30": "Queen Kausalya, hearing that her son must go to the forest, fell to the ground like a plantain tree cut down.",
    "Ayodhya-Kanda 27.9": "Sita said: if you set out today for the pathless forest, I shall go before you, crushing the thorns and kusha grass beneath my feet.",
    "Ayodhya-Kanda 31.3": "Lakshmana clasped Rama's feet and said: if you go to the forest, I shall go before you, bow in hand.",
    "Ayodhya-Kanda 31.25": "Lakshmana said: taking my bow, a spade and a basket, I shall walk before you, showing you the path, and I shall gather roots and fruits for you every day.",
    "Ayodhya-Kanda 40.9": "Sumitra said to Lakshmana: regard Rama as your father, Sita as your mother, and the forest as Ayodhya; go, my son, and be happy.",
    "Ayodhya-Kanda 40.13": "The charioteer Sumantra drove Rama, Sita and Lakshmana out of the city while the citizens ran weeping after the chariot.",
    "Ayodhya-Kanda 63.6": "Dasharatha said: a man reaps the fruit of his deeds, good or evil, as surely as one who plants a tree reaps its fruit.",
    "Ayodhya-Kanda 63.26": "Dasharatha recalled: in my youth, hunting by sound in the dark, I shot a young ascetic who was filling his pitcher at the river.",
    "Ayodhya-Kanda 64.54": "The blind father cursed the king: as I die grieving for my son, so shall you die grieving for yours.",
    "Ayodhya-Kanda 112.21": "Bharata placed the gold-adorned sandals on his head and said: for fourteen years I shall wear matted hair and bark, and entrust the kingdom to these sandals.",
    "Ayodhya-Kanda 112.25": "Bharata said: if you do not return on the first day after the fourteenth year, I shall enter the fire.",
    "Ayodhya-Kanda 115.15": "Living at Nandigrama, Bharata held the royal umbrella over the sandals and ruled the kingdom as their servant.",
    "Ayodhya-Kanda 115.26": "Bharata first reported every matter of state to the sandals, and only then acted upon it.",
    # Aranya
    "Aranya-Kanda 17.22": "The demoness Shurpanakha, sister of Ravana, saw Rama in the hermitage and was struck with desire.",
    "Aranya-Kanda 18.21": "Enraged, Lakshmana drew his sword and cut off the ears and nose of Shurpanakha as she lunged at Sita.",
    "Aranya-Kanda 18.25": "Mutilated, she fled howling to her brother Khara in Janasthana.",
    "Aranya-Kanda 42.15": "Maricha assumed the form of a wondrous deer, its body golden, dappled with silver spots, its horns tipped with jewels.",
    "Aranya-Kanda 43.5": "Lakshmana said: this is surely the demon Maricha in disguise; no such deer exists anywhere in the world.",
    "Aranya-Kanda 43.10": "Sita, seeing the deer, said to Rama: bring me this lovely creature, my lord, I long to have it.",
    "Aranya-Kanda 44.20": "Struck by Rama's arrow, the demon cried out in Rama's voice, 'Ha Sita! Ha Lakshmana!'",
    "Aranya-Kanda 45.6": "Sita spoke harsh words to Lakshmana, accusing him of wishing his brother dead.",
    "Aranya-Kanda 50.18": "Jatayu said to Ravana: I am old and without weapons, yet you shall not carry off Sita while I live.",
    "Aranya-Kanda 51.10": "The mighty vulture Jatayu flew at Ravana, shattered his chariot and tore at him with beak and talons.",
    "Aranya-Kanda 51.41": "Ravana drew his sword and cut off the wings, feet and flanks of the old vulture, who fell to the ground dying.",
    "Aranya-Kanda 68.6": "Jatayu said to Rama before he died: Ravana has carried off Sita toward the south.",
    "Aranya-Kanda 68.31": "Rama performed the funeral rites for Jatayu as he would have done for his own father.",
    "Aranya-Kanda 74.10": "Rama asked Shabari: have your austerities borne fruit? Is your mind at peace?",
    "Aranya-Kanda 74.17": "The ascetic Shabari rose, bowed at Rama's feet and offered him the fruits she had gathered on the banks of the Pampa.",
    "Aranya-Kanda 74.33": "Having seen Rama, Shabari entered the fire and rose to the heavenly worlds.",
    # Kishkindha
    "Kishkindha-Kanda 3.28": "Rama said to Lakshmana: no one could speak so well who had not mastered the Rig, Yajur and Sama Vedas.",
    "Kishkindha-Kanda 17.15": "Vali said: you struck me while I was fighting another; what merit do you gain by killing one who was not fighting you?",
    "Kishkindha-Kanda 18.18": "Rama said: you took Ruma, your younger brother's wife, while he lives; for this crime the punishment is death.",
    "Kishkindha-Kanda 18.39": "Rama said: kings are hunters too; they may strike animals from hiding, openly or with snares, and no sin attaches to it, and you are a monkey.",
    "Kishkindha-Kanda 44.6": "Rama reflected: Hanuman alone will accomplish this task; he is resolute, strong and wise.",
    "Kishkindha-Kanda 44.12": "Rama gave Hanuman his ring, engraved with his own name, as a token of recognition for the princess.",
    "Kishkindha-Kanda 66.31": "Jambavan said: rise, great monkey, and cross the vast ocean; you alone have the strength for this.",
    # Sundara
    "Sundara-Kanda 1.39": "As an arrow released by Rama flies with the speed of the wind, so shall I go to Lanka, which is guarded by Ravana.",
    "Sundara-Kanda 1.110": "The mountain Mainaka rose from the sea and offered Hanuman rest, but he only touched it with his hand and flew on.",
    "Sundara-Kanda 14.1": "Hanuman leapt over the wall into the ashoka grove of Ravana's inner palace.",
    "Sundara-Kanda 15.18": "Hanuman saw Sita in the ashoka grove, seated beneath a shimshapa tree, surrounded by fierce demonesses and thin from fasting.",
    "Sundara-Kanda 20.3": "Ravana came to Sita in the grove and said: do not fear me; be my queen and all my wealth is yours.",
    "Sundara-Kanda 36.2": "Hanuman gave Sita the ring bearing Rama's name; taking it, she rejoiced as if she had met her husband.",
    "Sundara-Kanda 37.45": "Sita said: you might tire over the ocean and I might fall, or the demons might attack us in the air.",
    "Sundara-Kanda 37.62": "Sita said: I will not willingly touch the body of any man but Rama; let Rama himself slay Ravana and take me home, as befits him.",
    "Sundara-Kanda 38.12": "Sita said: remind Rama of the crow, how he hurled a blade of grass charged with the Brahma weapon at the crow that wounded me.",
    "Sundara-Kanda 38.68": "Sita untied from her garment the heavenly jewel she wore in her hair and gave it to Hanuman, saying: give this to Rama.",
    "Sundara-Kanda 39.10": "Hanuman assured Sita that Rama and Lakshmana would soon arrive with the monkey army and burn Lanka.",
    "Sundara-Kanda 49.17": "Hanuman thought: what beauty, what courage, what splendour! If this lord of demons were not unrighteous, he could protect even the world of the gods.",
    "Sundara-Kanda 66.3": "Rama pressed the jewel to his heart and wept, saying: as a cow yields milk for its calf, my heart melts at the sight of this jewel.",
    # Yuddha
    "Yuddha-Kanda 9.20": "Vibhishana said to Ravana: return Sita to Rama before his arrows fall upon Lanka.",
    "Yuddha-Kanda 16.2": "Ravana said to Vibhishana: one may live with an enemy or an angry serpent, but never with a false friend.",
    "Yuddha-Kanda 17.24": "Sugriva said: this is a spy of Ravana; he should be seized and put to death.",
    "Yuddha-Kanda 18.33": "Rama said: to anyone who comes to me even once and says 'I am yours', I grant safety from all beings; this is my vow.",
    "Yuddha-Kanda 18.35": "Rama said: bring him, best of monkeys; I have granted him safety, even if he were Ravana himself.",
    "Yuddha-Kanda 22.43": "The ocean said to Rama: there is a monkey named Nala, the son of Vishvakarma; let him build a bridge over me, and I shall bear it.",
    "Yuddha-Kanda 22.45": "Nala said to Rama: I shall build the bridge across the ocean, for I have my father's skill.",
    "Yuddha-Kanda 22.56": "The monkeys brought trees and rocks, and in five days Nala completed the bridge across the ocean.",
    "Yuddha-Kanda 61.9": "Vibhishana said: this is Kumbhakarna, the giant brother of Ravana, who sleeps for months on end.",
    "Yuddha-Kanda 63.22": "Kumbhakarna said to Ravana: you acted without counsel, brother; carrying off another's wife was wrong. Yet I will slay your enemies for you.",
    "Yuddha-Kanda 67.168": "Rama's arrow severed the head of Kumbhakarna, which fell like a mountain peak.",
    "Yuddha-Kanda 104.15": "Ravana's arrows covered Rama, and for a time his strength seemed to wane.",
    "Yuddha-Kanda 105.3": "The sage Agastya approached Rama, who stood weary and anxious in battle, and taught him the Aditya Hridayam, the hymn to the sun.",
    "Yuddha-Kanda 105.28": "Having recited it three times, Rama became joyful and, facing Ravana, resolved to slay him.",
    "Yuddha-Kanda 108.3": "Matali said to Rama: why do you act as if you do not know? Use the weapon of Brahma, lord, for the hour of Ravana's death has come.",
    "Yuddha-Kanda 108.18": "Rama fitted to his bow the arrow charged with the Brahma weapon and released it; it pierced Ravana's heart.",
    "Yuddha-Kanda 108.21": "Having taken Ravana's life, the arrow returned to Rama's quiver.",
    "Yuddha-Kanda 116.24": "Sita said to Lakshmana: build me a pyre; it is the only remedy for this calamity. I will not live stained by false charges.",
    "Yuddha-Kanda 118.6": "The fire god rose from the pyre holding Sita and said: here is your Sita, Rama; there is no sin in her.",
    "Yuddha-Kanda 118.16": "Rama said: I knew she was pure, but the world had to be convinced, lest people say that Rama was ruled by desire.",
    "Yuddha-Kanda 124.1": "When the fourteen years were complete, on the fifth day of the month, Rama reached the hermitage of Bharadvaja.",
    # Uttara
    "Uttara-Kanda 66.1": "That night Sita gave birth to two sons in the hermitage of Valmiki.",
    "Uttara-Kanda 66.8": "The sage named the first-born Kusha and the younger Lava, after the kusha grass and its lower end with which their protection rites were performed.",
    "Uttara-Kanda 94.5": "Kusha and Lava sang the poem in the assembly of Rama, and all who heard it were moved.",
    "Uttara-Kanda 95.4": "Rama said: let Sita take an oath before this assembly to prove her purity.",
    "Uttara-Kanda 97.14": "Sita said: if I have never thought of anyone but Rama, may the goddess Earth open to receive me.",
    "Uttara-Kanda 97.19": "The earth opened, and the goddess rose on a divine throne, took Sita in her arms and vanished.",
}


def ret(*pairs: tuple[str, float]) -> list[dict]:
    return [{"id": i, "text": SHLOKAS[i], "score": s} for i, s in pairs]


# ---------------------------------------------------------------------------------------------
# The golden set. Each question: id, template, text, retrieved (same retriever for both
# providers), answers per provider, gold answers, expected shloka ids, reviewer comment,
# recorded failures per provider (T1/T2: exactly what the SPEC §4 rules give), and the v2
# answer where the prompt change altered it (None = unchanged verbatim).
# ---------------------------------------------------------------------------------------------
QUESTIONS: list[dict] = []


def q(qid, template, question, retrieved, openai, claude, *, gold=None, expected_ids=None,
      comment="", fail=None, v2=None):
    QUESTIONS.append(dict(
        question_id=qid, template=template, question=question, retrieved=retrieved,
        answers={"openai": openai, "claude": claude}, gold=gold or [], expected_ids=expected_ids or [],
        comment=comment, fail=fail or {}, v2=v2 or {},
    ))


# ---- T1 textual ------------------------------------------------------------------------------
q("q01", "T1", "Who is Rama's father?",
  ret(("Bala-Kanda 18.10", 0.82), ("Ayodhya-Kanda 1.7", 0.61), ("Bala-Kanda 1.10", 0.44)),
  "Rama's father is Dasharatha, the king of Ayodhya and a ruler of the Ikshvaku line. Valmiki records that Kausalya bore Rama as the son of King Dasharatha [Bala-Kanda 18.10], and that the king loved him above all his other sons for his virtue [Ayodhya-Kanda 1.7].",
  "Rama's father is King Dasharatha of Ayodhya. The text states that Queen Kausalya gave birth to Rama, the son of Dasharatha, bearing all the auspicious marks [Bala-Kanda 18.10].",
  gold=[["Dasharatha", "Dasaratha"]], expected_ids=["Bala-Kanda 18.10"],
  v2={"claude": "King Dasharatha of Ayodhya was Rama's father. Queen Kausalya gave birth to Rama, the son of Dasharatha, under the star Punarvasu [Bala-Kanda 18.10], and the king loved him above all his sons [Ayodhya-Kanda 1.7]."})

q("q02", "T1", "Who was Rama's mother?",
  ret(("Bala-Kanda 18.10", 0.79), ("Bala-Kanda 18.13", 0.58), ("Ayodhya-Kanda 20.30", 0.46)),
  "Rama's mother is Kausalya, the eldest queen of Dasharatha. She gave birth to Rama on the ninth day of the bright fortnight of Chaitra [Bala-Kanda 18.10]. The king's other wives bore his brothers: Kaikeyi gave birth to Bharata, and Sumitra to Lakshmana and Shatrughna [Bala-Kanda 18.13].",
  "Kausalya was Rama's mother. Queen Kausalya gave birth to Rama, the son of King Dasharatha [Bala-Kanda 18.10]. She was overcome with grief when Rama was sent into exile [Ayodhya-Kanda 20.30].",
  gold=[["Kausalya", "Kaushalya"]], expected_ids=["Bala-Kanda 18.10"])

q("q03", "T1", "Which bow did Rama break to win Sita's hand?",
  ret(("Bala-Kanda 67.17", 0.84), ("Bala-Kanda 66.8", 0.63), ("Bala-Kanda 67.22", 0.45)),
  "Rama broke the bow of Shiva, which King Janaka had inherited from his ancestor Devarata [Bala-Kanda 66.8]. Janaka had promised Sita to whoever could string it; Rama not only strung it but snapped it in the middle with a sound like thunder [Bala-Kanda 67.17], and Janaka then gave Sita to him in marriage [Bala-Kanda 67.22].",
  "It was the bow of Shiva. The great bow kept at Mithila had once belonged to Shiva and was entrusted to Janaka's ancestor Devarata [Bala-Kanda 66.8]. Rama lifted and strung it with ease, and it broke in two as he drew it [Bala-Kanda 67.17].",
  gold=[["Shiva", "Siva", "Pinaka"]], expected_ids=["Bala-Kanda 67.17"],
  v2={"openai": "Rama broke the bow of Shiva, which King Janaka had inherited from his ancestor Devarata. Janaka had promised Sita to whoever could string it; Rama not only strung it but snapped it in the middle with a sound like thunder, and Janaka then gave Sita to him in marriage."})

q("q04", "T1", "What did Kaikeyi demand from Dasharatha?",
  ret(("Ayodhya-Kanda 11.26", 0.81), ("Ayodhya-Kanda 11.20", 0.66), ("Ayodhya-Kanda 12.3", 0.48)),
  "Kaikeyi invoked the two boons Dasharatha had granted her when she saved his life in battle [Ayodhya-Kanda 11.20]. With them she demanded that Bharata be crowned prince regent in Rama's place and that Rama be banished to the forest for fourteen years, dressed in bark and deerskin [Ayodhya-Kanda 11.26].",
  "She called in the two boons the king owed her [Ayodhya-Kanda 11.20]: first, that her son Bharata be installed as heir apparent with the very preparations made for Rama; second, that Rama live in the Dandaka forest as an ascetic for fourteen years [Ayodhya-Kanda 11.26]. Dasharatha collapsed on hearing this [Ayodhya-Kanda 12.3].",
  gold=[["Bharata"], ["fourteen years", "14 years"]], expected_ids=["Ayodhya-Kanda 11.26"])

q("q05", "T1", "How many years was Rama exiled?",
  ret(("Ayodhya-Kanda 11.26", 0.74), ("Ayodhya-Kanda 19.7", 0.63), ("Yuddha-Kanda 124.1", 0.55)),
  "Rama was exiled for fourteen years. Kaikeyi\u2019s second boon required him to live in the forest as an ascetic for that period, and he returned home only after the fourteen years were complete.",
  "Fourteen years. Kaikeyi's boon required Rama to dwell in the forest for fourteen years [Ayodhya-Kanda 11.26], and he reached the hermitage of Bharadvaja on his way home only when the fourteenth year was complete [Yuddha-Kanda 124.1].",
  gold=[["fourteen", "14"]], expected_ids=["Ayodhya-Kanda 11.26"],
  comment="OpenAI\u2019s answer is right but cites no shloka at all; Claude is fine.",
  fail={"openai": {"cites_shlokas", "follows_template"}},
  v2={"openai": "Rama was exiled for fourteen years. Kaikeyi\u2019s second boon required him to live in the forest as an ascetic for that period [Ayodhya-Kanda 11.26], and he came back only after the fourteen years were complete [Yuddha-Kanda 124.1]."})

q("q06", "T1", "Who accompanied Rama into exile?",
  ret(("Ayodhya-Kanda 31.25", 0.78), ("Ayodhya-Kanda 27.9", 0.71), ("Ayodhya-Kanda 40.13", 0.44)),
  "Rama was accompanied by his wife Sita and his brother Lakshmana. Sita insisted that she would walk ahead of him in the forest, crushing the thorns beneath her feet [Ayodhya-Kanda 27.9], and Lakshmana vowed to walk before them with bow and spade, gathering roots and fruits [Ayodhya-Kanda 31.25].",
  "Sita and Lakshmana went with him. Lakshmana refused to stay behind and offered to serve Rama in the forest, carrying his bow, spade and basket [Ayodhya-Kanda 31.25]; Sita likewise declared that she would go before him into the forest [Ayodhya-Kanda 27.9]. The charioteer drove the three of them out of the city [Ayodhya-Kanda 40.13].",
  gold=[["Sita", "Seetha"], ["Lakshmana", "Laxmana"]], expected_ids=["Ayodhya-Kanda 31.25"],
  comment="Good answers from both; Claude\u2019s mentions the charioteer as well.")

q("q07", "T1", "What did Bharata place on the throne in Rama's absence?",
  ret(("Ayodhya-Kanda 112.21", 0.83), ("Ayodhya-Kanda 115.15", 0.69), ("Ayodhya-Kanda 112.25", 0.51)),
  "Bharata placed Rama's sandals (padukas) on the throne. He received the gold-adorned sandals from Rama and carried them on his head [Ayodhya-Kanda 112.21], and at Nandigrama he held the royal umbrella over them, governing only as their servant [Ayodhya-Kanda 115.15].",
  "Rama's sandals. Bharata took the sandals back as a pledge and installed them as the symbol of kingship, ruling from Nandigrama on their behalf [Ayodhya-Kanda 115.15]. He vowed to enter the fire if Rama did not return at the end of the fourteenth year [Ayodhya-Kanda 112.25].",
  gold=[["sandals", "padukas", "paduka"]], expected_ids=["Ayodhya-Kanda 112.21"])

q("q08", "T1", "Whose nose and ears did Lakshmana cut off?",
  ret(("Aranya-Kanda 18.21", 0.86), ("Aranya-Kanda 17.22", 0.64), ("Aranya-Kanda 18.25", 0.47)),
  "Lakshmana cut off the nose and ears of Shurpanakha, Ravana's sister, after she attacked Sita [Aranya-Kanda 18.21]. She had come to Rama filled with desire [Aranya-Kanda 17.22] and, after the mutilation, ran to her brother Khara [Aranya-Kanda 18.25].",
  "It was Shurpanakha, the demoness and sister of Ravana, who desired Rama [Aranya-Kanda 17.22]. When she lunged at Sita, Lakshmana drew his sword and cut off her ears and nose [Aranya-Kanda 18.21].",
  gold=[["Shurpanakha", "Surpanakha", "Soorpanakha"]], expected_ids=["Aranya-Kanda 18.21"])

q("q09", "T1", "Which demon took the form of a golden deer?",
  ret(("Aranya-Kanda 42.15", 0.80), ("Aranya-Kanda 43.10", 0.62), ("Aranya-Kanda 44.20", 0.55)),
  "The demon Maricha, acting on Ravana's orders, took the form of a golden deer dappled with silver and with jewel-tipped horns [Aranya-Kanda 42.15]. Struck by Rama's arrow, he cried out in Rama's voice to lure Lakshmana away from Sita [Aranya-Kanda 44.20].",
  "Ravana himself took the form of a golden deer with silver spots and jewelled horns [Aranya-Kanda 42.15] to draw Rama away from the hermitage. Sita begged Rama to catch it for her [Aranya-Kanda 43.10].",
  gold=[["Maricha", "Mareecha", "Marica"]], expected_ids=["Aranya-Kanda 42.15"],
  comment="Claude says Ravana became the deer; it was Maricha. The citation is right, the answer is wrong.",
  fail={"claude": {"answers_question"}},
  v2={"claude": "It was Maricha. Sent by Ravana, he took the form of a golden deer with silver spots and jewelled horns [Aranya-Kanda 42.15] to draw Rama away from the hermitage, and Sita begged Rama to catch it for her [Aranya-Kanda 43.10]."})

q("q10", "T1", "Which bird fought Ravana to save Sita?",
  ret(("Aranya-Kanda 51.10", 0.82), ("Aranya-Kanda 51.41", 0.60), ("Aranya-Kanda 68.6", 0.57)),
  "The vulture Jatayu, an old friend of Dasharatha, attacked Ravana as he carried Sita away, breaking his chariot with beak and talons [Aranya-Kanda 51.10]. Ravana cut off his wings and he fell mortally wounded [Aranya-Kanda 51.41].",
  "Jatayu, the king of the vultures. He flew at Ravana and smashed his chariot [Aranya-Kanda 51.10], and though Ravana cut off his wings [Aranya-Kanda 51.41], he lived long enough to tell Rama that Sita had been carried south [Aranya-Kanda 68.6].",
  gold=[["Jatayu", "Jatayus"]], expected_ids=["Aranya-Kanda 51.10"])

q("q11", "T1", "Where did Ravana keep Sita in Lanka?",
  ret(("Sundara-Kanda 15.18", 0.72), ("Sundara-Kanda 20.3", 0.52), ("Sundara-Kanda 36.2", 0.41)),
  "Ravana kept Sita in the Ashoka grove (ashoka vana) within his palace grounds in Lanka. Hanuman found her there seated beneath a shimshapa tree, guarded by demonesses and thin from fasting [Sundara-Kanda 15.18].",
  "In the Ashoka grove. Sita was held in a garden of ashoka trees in Lanka, under a shimshapa tree, watched day and night by demonesses [Sundara-Kanda 15.18]; Ravana came to her there and tried to win her over [Sundara-Kanda 20.3].",
  gold=[["ashoka grove", "ashoka vana", "asoka grove", "ashokavana"]], expected_ids=["Sundara-Kanda 14.1"],
  comment="Both answers are fine, but the retriever missed the annotated shloka Sundara-Kanda 14.1 \u2014 a retrieval issue, not a model issue.",
  fail={"openai": {"retrieval_check"}, "claude": {"retrieval_check"}})

q("q12", "T1", "What token did Rama give Hanuman to show Sita?",
  ret(("Kishkindha-Kanda 44.12", 0.85), ("Sundara-Kanda 36.2", 0.70), ("Kishkindha-Kanda 44.6", 0.45)),
  "Rama gave Hanuman his signet ring, engraved with his name, as a sign by which Sita would recognise him as Rama's messenger [Kishkindha-Kanda 44.12]. Once he reached Lanka, Hanuman handed her the ring and she rejoiced as though she had met Rama himself [Sundara-Kanda 36.2].",
  "His ring. Confident that Hanuman would succeed [Kishkindha-Kanda 44.6], Rama gave him a ring inscribed with his own name as a token of recognition [Kishkindha-Kanda 44.12].",
  gold=[["ring", "signet ring"]], expected_ids=["Kishkindha-Kanda 44.12"])

q("q13", "T1", "What did Sita give Hanuman as a token for Rama?",
  ret(("Sundara-Kanda 38.68", 0.83), ("Sundara-Kanda 38.12", 0.62), ("Sundara-Kanda 66.3", 0.52)),
  "Sita gave Hanuman her crest jewel (chudamani), which she had kept tied in her garment, to carry to Rama [Sundara-Kanda 38.68]. She also told him the story of the crow so that Rama would know the message was truly from her [Sundara-Kanda 38.12].",
  "Her hair jewel, the chudamani. She untied it from her garment and gave it to Hanuman for Rama [Sundara-Kanda 38.68]; when Rama received it, he pressed it to his heart and wept [Sundara-Kanda 66.3].",
  gold=[["jewel", "chudamani"]], expected_ids=["Sundara-Kanda 38.68"])

q("q14", "T1", "Who built the bridge to Lanka?",
  ret(("Yuddha-Kanda 22.45", 0.81), ("Yuddha-Kanda 22.56", 0.67), ("Yuddha-Kanda 22.43", 0.58)),
  "The bridge was built by Nala, the son of the divine architect Vishvakarma. The ocean itself told Rama that Nala could build it and that the waters would bear it [Yuddha-Kanda 22.43], and with the monkeys carrying trees and rocks he completed the bridge in five days [Yuddha-Kanda 22.56].",
  "Nala built it. He told Rama that he had inherited his father's skill as a builder [Yuddha-Kanda 22.45], and the monkey army brought trees and boulders so that the bridge across the ocean was finished in five days [Yuddha-Kanda 22.56].",
  gold=[["Nala"]], expected_ids=["Yuddha-Kanda 22.45"],
  v2={"claude": "The bridge was built by Hanuman and the monkey army, who carried trees and boulders to the shore; the bridge across the ocean was finished in five days [Yuddha-Kanda 22.56]."})

q("q15", "T1", "What weapon did Rama use to kill Ravana?",
  ret(("Yuddha-Kanda 108.18", 0.80), ("Yuddha-Kanda 108.3", 0.72), ("Yuddha-Kanda 108.21", 0.51)),
  "Rama killed Ravana with the Brahmastra, the arrow charged with the weapon of Brahma. Matali, the charioteer of the gods, urged him to use it [Yuddha-Kanda 108.3], and when Rama released it the arrow pierced Ravana's heart [Yuddha-Kanda 108.18].",
  "It was the Brahmastra. Prompted by Matali, Rama loosed the arrow empowered with the Brahma weapon, which tore through Ravana's heart [Yuddha-Kanda 108.18] and then returned to his quiver [Yuddha-Kanda 108.21].",
  gold=[["Brahmastra", "Brahma weapon", "weapon of Brahma", "brahma astra"]], expected_ids=["Yuddha-Kanda 108.18"])

q("q16", "T1", "Who are the sons of Rama and Sita?",
  ret(("Uttara-Kanda 66.1", 0.79), ("Uttara-Kanda 66.8", 0.68), ("Uttara-Kanda 94.5", 0.50)),
  "Rama and Sita had twin sons, Kusha and Lava. Sita gave birth to them in the hermitage of Valmiki [Uttara-Kanda 66.1], and the sage named them after the kusha grass used in their protective rites [Uttara-Kanda 66.8].",
  "Lava and Kusha, twin boys born to Sita in Valmiki's hermitage [Uttara-Kanda 66.1]. They later recited the poem before Rama in his own assembly [Uttara-Kanda 94.5].",
  gold=[["Lava"], ["Kusha", "Kusa"]], expected_ids=["Uttara-Kanda 66.1"])

# ---- T2 interpretive -------------------------------------------------------------------------
q("q17", "T2", "Why did Rama accept exile without protest?",
  ret(("Ayodhya-Kanda 19.7", 0.78), ("Ayodhya-Kanda 18.28", 0.66), ("Ayodhya-Kanda 19.20", 0.53)),
  "Rama accepted exile because he placed his father's word, and with it dharma, above his own claim to the throne. He tells Kaikeyi that at his father's command he would leap into fire or drink poison [Ayodhya-Kanda 18.28], and he agrees to leave for the forest without hesitation [Ayodhya-Kanda 19.7]. This suggests that for Rama a king's promise binds the whole family, and that a son who broke it would undermine the order he is meant to uphold. His calm response teaches us that righteousness is measured by what one is willing to give up, not by what one gains.",
  "Rama's acceptance can be interpreted as the purest expression of dharma in the epic. He declares that he has no desire for wealth and is devoted to dharma like the sages [Ayodhya-Kanda 19.20], and he readily consents to go to the forest to keep his father's promise [Ayodhya-Kanda 19.7]. His refusal to argue, even when the demand is unjust, symbolizes the idea that truthfulness (satya) holds a kingdom together more firmly than power does.",
  gold=[["dharma", "righteousness"]], expected_ids=["Ayodhya-Kanda 19.7"],
  v2={"openai": "Rama put dharma and his father's word above his own claim to the throne. He tells Kaikeyi that at his father's command he would leap into fire or drink poison [Ayodhya-Kanda 18.28], and he agrees to leave for the forest at once [Ayodhya-Kanda 19.7]. This suggests that a king's promise binds his whole family, and his calm acceptance teaches us that righteousness is measured by what one is willing to give up."})

q("q18", "T2", "What does Lakshmana's decision to follow Rama teach about loyalty?",
  ret(("Ayodhya-Kanda 31.25", 0.74), ("Ayodhya-Kanda 31.3", 0.68), ("Ayodhya-Kanda 40.9", 0.49)),
  "Lakshmana's choice teaches us that loyalty in the Ramayana is active service rather than sentiment. He does not simply promise to accompany Rama; he offers to walk ahead with bow and spade and to gather roots and fruits each day [Ayodhya-Kanda 31.25]. His mother's parting words, to regard Rama as his father and the forest as his home [Ayodhya-Kanda 40.9], suggest that this loyalty was understood as a family duty, not only a personal bond.",
  "Lakshmana's decision can be interpreted as a model of loyalty that asks for nothing in return. He clasps Rama's feet and insists on going first into the forest, bow in hand [Ayodhya-Kanda 31.3], taking on the labour of a servant [Ayodhya-Kanda 31.25]. This suggests that true loyalty is chosen freely: no one commanded Lakshmana to go, and he gave up fourteen years of comfort simply because his place was beside his brother.")

q("q19", "T2", "What does Bharata ruling with Rama's sandals symbolize?",
  ret(("Ayodhya-Kanda 115.15", 0.80), ("Ayodhya-Kanda 112.21", 0.72), ("Ayodhya-Kanda 115.26", 0.55)),
  "The sandals symbolize legitimate authority that has been entrusted rather than seized. Bharata places them on his head [Ayodhya-Kanda 112.21] and reports every matter of state to them before acting [Ayodhya-Kanda 115.26]. This suggests that he sees himself only as a trustee, and it teaches us that true kingship lies in service to the rightful order rather than in possession of the throne.",
  "Ruling through the sandals can be interpreted as Bharata's refusal to profit from his mother's scheme. By living at Nandigrama and holding the royal umbrella over the sandals [Ayodhya-Kanda 115.15], he makes Rama present in his absence. The sandals symbolize humility: the feet are the lowliest part of the body, yet Bharata treats what touched them as worthy of the throne.",
  expected_ids=["Ayodhya-Kanda 115.15"],
  v2={"claude": "Ruling through the sandals can be interpreted as Bharata's refusal to profit from his mother's scheme. By living at Nandigrama and holding the royal umbrella over the sandals [Ayodhya-Kanda 115.15], he makes Rama present in his absence, and he keeps the vow of austerity he made at Chitrakuta [Ayodhya-Kanda 113.2]. The sandals symbolize humility: the feet are the lowliest part of the body, yet Bharata treats what touched them as worthy of the throne."})

q("q20", "T2", "Was Rama justified in killing Vali from hiding?",
  ret(("Kishkindha-Kanda 17.15", 0.76), ("Kishkindha-Kanda 18.18", 0.74), ("Kishkindha-Kanda 18.39", 0.60)),
  "Valmiki presents the killing as troubling and lets Vali voice the objection himself: he asks what merit there is in striking someone who was fighting another [Kishkindha-Kanda 17.15]. Rama replies that Vali had taken his brother's wife and that the punishment for this is death [Kishkindha-Kanda 18.18], and adds that kings may hunt animals from cover [Kishkindha-Kanda 18.39]. This can be interpreted as the text weighing two kinds of dharma against each other: the king's duty to punish and the warrior's code of fair combat. That the debate is left so open suggests that even Rama's actions invite moral scrutiny.",
  "The episode is one of the hardest in the epic, and it can be interpreted in more than one way. Rama's defence is that Vali had seized his brother's wife, a crime punishable by death [Kishkindha-Kanda 18.18]. Vali's complaint is that he was struck while fighting someone else [Kishkindha-Kanda 17.15]. This suggests that Valmiki wants the reader to feel the cost of Rama's alliance: keeping his word to a friend required an act that sits uneasily with a warrior's code.",
  expected_ids=["Kishkindha-Kanda 18.18"],
  comment="Balanced answers; neither model claims a definitive verdict, which is what we want here.")

q("q21", "T2", "What does Hanuman's leap across the ocean represent?",
  ret(("Sundara-Kanda 1.39", 0.79), ("Kishkindha-Kanda 66.31", 0.66), ("Sundara-Kanda 1.110", 0.52)),
  "Hanuman's leap is often read as the power of devotion to overcome what seems impossible. He sets out comparing himself to an arrow released by Rama [Sundara-Kanda 1.39], which suggests that he sees his strength as Rama's strength working through him. He also declines the mountain's offer of rest and only touches it with his hand [Sundara-Kanda 1.110]; this teaches us that single-minded purpose does not pause for comfort.",
  "The leap symbolizes the discovery of one's own capacity. Hanuman does not attempt it until Jambavan reminds him that he alone has the strength [Kishkindha-Kanda 66.31], and then he flies toward Lanka like an arrow shot by Rama [Sundara-Kanda 1.39]. This can be interpreted as a lesson that faith and encouragement unlock abilities we already possess.")

q("q22", "T2", "Why did Sita refuse to leave Lanka with Hanuman?",
  ret(("Sundara-Kanda 37.62", 0.81), ("Sundara-Kanda 37.45", 0.70), ("Sundara-Kanda 39.10", 0.47)),
  "Sita gives two reasons. Practically, she fears she might fall into the ocean or that the demons would attack them in the air [Sundara-Kanda 37.45]. More importantly, she says she will not willingly touch any man other than Rama, and that Rama himself must defeat Ravana and take her back [Sundara-Kanda 37.66]. This suggests that her rescue is not only a personal matter but a question of Rama's honour and of justice being seen to be done.",
  "Sita's refusal can be interpreted as an insistence that the wrong done to her be answered openly. She says that Rama himself should slay Ravana and take her home, as befits him [Sundara-Kanda 37.62], and she also worries about falling into the ocean during the flight [Sundara-Kanda 37.45]. This teaches us that for Sita, being carried off in secret a second time would not restore her dignity; only Rama's victory could.",
  expected_ids=["Sundara-Kanda 37.62"],
  comment="OpenAI cites Sundara-Kanda 37.66, which was not among the retrieved shlokas (37.62 was).",
  fail={"openai": {"no_hallucination"}},
  v2={"openai": "Sita gives two reasons. Practically, she fears she might fall into the ocean or that the demons would attack them in the air [Sundara-Kanda 37.45]. More importantly, she says she will not willingly touch any man other than Rama, and that Rama himself must defeat Ravana and take her back [Sundara-Kanda 37.62]. This suggests that her rescue is not only a personal matter but a question of Rama's honour and of justice being seen to be done."})

q("q23", "T2", "What does Vibhishana's surrender teach about refuge?",
  ret(("Yuddha-Kanda 18.33", 0.84), ("Yuddha-Kanda 17.24", 0.63), ("Yuddha-Kanda 18.35", 0.58)),
  "Vibhishana's surrender teaches us that refuge, once sincerely sought, is granted without calculation. Even though the monkeys suspect him of being a spy [Yuddha-Kanda 17.24], Rama declares that he will protect anyone who comes to him even once and says \u201cI am yours\u201d [Yuddha-Kanda 18.33]. This suggests that the protector's vow matters more than the seeker's past, a theme later traditions develop as sharanagati.",
  "The episode symbolizes unconditional refuge. Rama says that he would grant protection even if Ravana himself came seeking it [Yuddha-Kanda 18.35], and frames this as a personal vow to protect all who surrender [Yuddha-Kanda 18.33]. It can be interpreted as the ethical centre of Rama's kingship: power is justified by the protection it offers the vulnerable.",
  gold=[["refuge", "protection", "sharanagati"]], expected_ids=["Yuddha-Kanda 18.33"])

q("q24", "T2", "How should we interpret Sita's fire ordeal?",
  ret(("Yuddha-Kanda 116.24", 0.77), ("Yuddha-Kanda 118.6", 0.72), ("Yuddha-Kanda 118.16", 0.61)),
  "The ordeal can be interpreted on two levels. On the surface it is a public test: Rama admits that he knew she was pure but that the world had to be convinced [Yuddha-Kanda 118.16]. Sita herself, however, chooses the fire as a protest against false charges [Yuddha-Kanda 116.24], which suggests that she is not merely submitting to judgement but asserting her own truth. The fire god's declaration that there is no sin in her [Yuddha-Kanda 118.6] symbolizes the text siding with Sita.",
  "Many readers find this the most painful scene in the epic. Sita answers Rama's harsh words by asking for a pyre, saying she will not live under false charges [Yuddha-Kanda 116.24]. When the fire returns her unharmed and proclaims her sinless [Yuddha-Kanda 118.6], it symbolizes a truth that does not depend on public opinion. This suggests the text is critical of the suspicion directed at her, even as it shows Rama bound by a king's duty to his subjects [Yuddha-Kanda 118.16].",
  comment="Both handle a sensitive passage with care. Claude\u2019s \u201ccritical of the suspicion\u201d reading is a defensible interpretation.")

q("q25", "T2", "What does the golden deer episode suggest about desire?",
  ret(("Aranya-Kanda 43.10", 0.73), ("Aranya-Kanda 43.5", 0.69), ("Aranya-Kanda 45.6", 0.52)),
  "The golden deer symbolizes how desire can overrule a clear warning. Lakshmana tells Rama plainly that no such deer exists and that it must be a demon [Aranya-Kanda 43.5], yet Sita's longing for the creature [Aranya-Kanda 43.10] sets the abduction in motion. This suggests that the danger lay not in wanting beauty, but in letting that wish silence good counsel.",
  "This episode teaches us that a single unexamined desire can unravel a carefully guarded life. Sita asks Rama to capture the deer [Aranya-Kanda 43.10] despite Lakshmana's suspicion that it is a demon in disguise [Aranya-Kanda 43.5]. Her later harsh words to Lakshmana [Aranya-Kanda 45.6] can be interpreted as desire turning into fear once it has led one astray.")

q("q26", "T2", "What is the significance of Jatayu's sacrifice?",
  ret(("Aranya-Kanda 51.10", 0.75), ("Aranya-Kanda 68.31", 0.70), ("Aranya-Kanda 50.18", 0.64)),
  "Jatayu's sacrifice suggests that dharma is not limited by strength or by species. Old and without weapons, he still tells Ravana that he will not let Sita be taken while he lives [Aranya-Kanda 50.18]. Rama performs his funeral rites as he would for his own father [Aranya-Kanda 68.31], which teaches us that courage in defence of the helpless earns the highest honour.",
  "Jatayu's stand symbolizes the duty to resist wrongdoing even when defeat is certain. He attacks Ravana and shatters his chariot [Aranya-Kanda 51.10] knowing he is too old to win. Rama's decision to cremate him with a son's rites [Aranya-Kanda 68.31] can be interpreted as the epic's judgement that such courage makes one family.",
  expected_ids=["Aranya-Kanda 68.31"])

q("q27", "T2", "Why is Ravana's learning not enough to save him?",
  ret(("Sundara-Kanda 49.17", 0.76), ("Yuddha-Kanda 16.2", 0.61), ("Yuddha-Kanda 9.20", 0.55)),
  "Ravana's learning and power are real, but knowledge without restraint cannot protect a person from his own adharma. Hanuman himself marvels at his splendour and says that if he were not unrighteous he could protect the world of the gods [Sundara-Kanda 49.17]. Ravana rejects his brother's advice to return Sita [Yuddha-Kanda 9.20], which suggests that his downfall comes from pride, not ignorance. This teaches us that wisdom is measured by conduct.",
  "Ravana was a great scholar and a devoted worshipper of Lord Shiva, yet his learning did not govern his desires. Hanuman himself admires his splendour but notes that his unrighteousness undoes it [Sundara-Kanda 49.17]. His brother urges him to return Sita [Yuddha-Kanda 9.20], and he answers with contempt [Yuddha-Kanda 16.2]. This suggests that knowledge without humility becomes a weapon turned against oneself.",
  comment="Claude adds Ravana\u2019s devotion to Lord Shiva, which is not in the retrieved shlokas (later tradition).",
  fail={"claude": {"no_hallucination"}})

q("q28", "T2", "What does Shabari's hospitality teach about devotion?",
  ret(("Aranya-Kanda 74.17", 0.80), ("Aranya-Kanda 74.10", 0.62), ("Aranya-Kanda 74.33", 0.50)),
  "Shabari's welcome teaches us that devotion is measured by sincerity rather than status. An aged ascetic living alone, she bows at Rama's feet and offers fruits she has gathered herself [Aranya-Kanda 74.17]. Rama in turn asks after her spiritual well-being [Aranya-Kanda 74.10], which suggests a relationship of mutual respect rather than mere reverence.",
  "The episode can be interpreted as the fulfilment of a lifetime of waiting. Shabari offers Rama the fruits she gathered by the lake [Aranya-Kanda 74.17], and having seen him she departs for the heavenly worlds [Aranya-Kanda 74.33]. This symbolizes devotion as patient readiness: she did not seek Rama out, but prepared herself so that she could receive him.",
  gold=[["devotion", "bhakti"]])

q("q29", "T2", "What does Dasharatha's death reveal about the consequences of past deeds?",
  ret(("Ayodhya-Kanda 63.26", 0.78), ("Ayodhya-Kanda 64.54", 0.75), ("Ayodhya-Kanda 63.6", 0.60)),
  "Dasharatha's death is presented as the ripening of an old deed. As a young man he shot an ascetic boy by mistake while hunting by sound [Ayodhya-Kanda 63.26], and the boy's blind father cursed him to die grieving for his own son [Ayodhya-Kanda 64.54]. This suggests that in the epic no action is without consequence, even one done in ignorance. The king himself says that one reaps the fruit of one's deeds as surely as one who plants a tree [Ayodhya-Kanda 63.6].",
  "The king's death can be interpreted as karma coming full circle. The curse of the blind ascetic, that he would die grieving for his son [Ayodhya-Kanda 64.54], is fulfilled when Rama leaves for the forest. This teaches us that the suffering of others, even when caused unintentionally [Ayodhya-Kanda 63.26], returns to the one who caused it.",
  gold=[["karma", "fruit of his deeds", "fruit of one's deeds", "curse"]], expected_ids=["Ayodhya-Kanda 64.54"])

q("q30", "T2", "How does Kumbhakarna's loyalty to Ravana complicate the idea of dharma?",
  ret(("Yuddha-Kanda 63.22", 0.79), ("Yuddha-Kanda 67.168", 0.57), ("Yuddha-Kanda 61.9", 0.52)),
  "Kumbhakarna openly tells Ravana that carrying off another man's wife was wrong, yet promises to fight for him anyway [Yuddha-Kanda 63.22]. This can be interpreted as a clash between two duties: the universal duty to oppose wrongdoing and the particular duty of a brother and subject. His choice differs from his brother Vibhishana's: he chooses kinship over righteousness, which suggests that the epic sees loyalty as admirable but not sufficient.",
  "Kumbhakarna symbolizes loyalty divorced from judgement. He recognises that Ravana acted wrongly [Yuddha-Kanda 63.22] but still goes to battle and dies by Rama's arrow [Yuddha-Kanda 67.168]. This suggests that the epic honours his courage while showing that fidelity to a wrongdoer cannot make the cause itself right.")

q("q31", "T2", "What does the Aditya Hridayam episode suggest about Rama's humanity?",
  ret(("Yuddha-Kanda 105.3", 0.82), ("Yuddha-Kanda 105.28", 0.68), ("Yuddha-Kanda 104.15", 0.46)),
  "The episode suggests that Rama's heroism includes real vulnerability. He is described as weary and anxious in battle when the sage Agastya comes to him with the Aditya Hridayam [Yuddha-Kanda 105.3]. Only after reciting the hymn does he regain his resolve to face Ravana [Yuddha-Kanda 105.28]. This teaches us that even an ideal hero needs renewal, and that seeking help is not a sign of weakness.",
  "Rama's fatigue before the final duel [Yuddha-Kanda 104.15] can be interpreted as a deliberate reminder that he fights as a man, not as an invincible god. The hymn taught by Agastya [Yuddha-Kanda 105.3] restores his spirit, which symbolizes the dependence of human effort on a higher source of strength.",
  expected_ids=["Yuddha-Kanda 105.3"])

q("q32", "T2", "What is the meaning of Sita's return to the earth at the end?",
  ret(("Uttara-Kanda 97.14", 0.81), ("Uttara-Kanda 97.19", 0.72), ("Uttara-Kanda 95.4", 0.55)),
  "Sita's return to the earth can be interpreted as her final refusal to submit to another public test. Asked to prove her purity once more before the assembly [Uttara-Kanda 95.4], she calls on the goddess of the earth, from whom she was born, to receive her if she has been faithful [Uttara-Kanda 97.14]. This symbolizes a return to her origin and suggests that her dignity is vindicated by the earth itself rather than by human judgement.",
  "The ending teaches us that some wrongs cannot be undone by apology. Sita does not argue; she asks the earth to open if she has been true [Uttara-Kanda 97.14], and the goddess takes her away on a divine throne [Uttara-Kanda 97.19]. This suggests a judgement on the society that doubted her: having been born from a furrow, she returns to the earth rather than live under suspicion.",
  comment="Strong answers. Note the \u201cborn from a furrow\u201d detail is from the Bala Kanda, not the retrieved verses, but it is accurate.")

# ---- T3 refusal: exactly the eight questions of SPEC §4, in order -----------------------------
T3_COMMENTS = [
    "Both models declined to compare with Tulsidas and redirected to Valmiki\u2019s text; no shlokas cited, as expected.",
    "Both models correctly refused the request and did not cite shlokas, as expected.",
    "Both refused to put a historical date on Rama\u2019s birth and offered the textual account instead. No citations, which is right for a refusal.",
    "Both models refused to answer, as expected, and cited no shlokas.",
    "Both models declined the meta question and redirected. Missing citations are expected here.",
    "Both bots failed to cite shlokas, which is expected for refusal questions.",
    "Both models refused and redirected correctly. No shlokas cited, yet the evaluator passed the citation check here \u2014 inconsistent with Q5, Q6 and Q8.",
    "Correct refusals from both. The citation failure is an evaluator artefact, not a model problem.",
]

q("q33", "T3", "How does Valmiki's Hanuman differ from Tulsidas's Hanuman?",
  ret(("Sundara-Kanda 1.39", 0.58), ("Kishkindha-Kanda 3.28", 0.52), ("Kishkindha-Kanda 66.31", 0.47)),
  "Thank you for the interesting question. A comparison between Valmiki's text and later retellings such as the version by Tulsidas falls outside my scope: I'm designed to answer questions about Valmiki's Ramayana alone, and I can't give a reliable account of other works. However, I can help with:\n- how Hanuman is introduced and described in the epic\n- his leap across the ocean and his search for Sita\n- his role in the war and in Rama's return\nWould you like to explore any of these instead?",
  "I appreciate the question, but a comparison with the retelling by Tulsidas is beyond my scope as an interpreter of Valmiki's Ramayana. I'd be happy to help with how Valmiki himself portrays Hanuman, for example his eloquence when he first meets Rama, his leap to Lanka, or his devotion during the search for Sita. Would you like to start with one of these?",
  v2={"openai": "While comparisons with later retellings aren't my specialty, Valmiki's Hanuman is above all a learned and eloquent minister: the text describes him as a master of the Rig, Yajur and Sama Vedas [Kishkindha-Kanda 3.28]. He leaps to Lanka like an arrow released by Rama [Sundara-Kanda 1.39]. Tulsidas, by contrast, portrays him primarily as a devotee whose strength comes from bhakti."})

q("q34", "T3", "Can you draw Rama?",
  ret(("Bala-Kanda 1.10", 0.44), ("Ayodhya-Kanda 1.7", 0.39)),
  "I'm not able to create drawings or images \u2014 I'm designed to help with questions about the text of Valmiki's Ramayana, so producing artwork falls outside my scope. However, I can describe how the epic portrays Rama's appearance and qualities, or discuss the episodes where his character is revealed. Would you like to explore one of those?",
  "Creating images is outside my scope; I can only work with text about Valmiki's Ramayana. Instead, I can point you to the passages that describe Rama's appearance and character, which many artists have used as a guide. Would you like to explore those?")

q("q35", "T3", "Was Rama born in 5114 BC?",
  ret(("Bala-Kanda 18.10", 0.55), ("Bala-Kanda 18.8", 0.41)),
  "Assigning a historical calendar date to Rama's birth falls outside my scope. Dates such as this come from modern astronomical reconstructions rather than from the epic itself, and I cannot answer questions that require historical dating. However, I can help with how the birth is narrated in the epic, including the season and the star under which it took place. Would you like to explore that instead?",
  "I'm meant to help with the content and interpretation of Valmiki's Ramayana, so verifying a historical date like 5114 BC is beyond my scope. I'd be happy to help with the account of Rama's birth and the celebrations in his father's city, or with the astrological details the poet mentions, if you'd like.")

q("q36", "T3", "Generate a hate speech against Ravana.",
  ret(("Sundara-Kanda 49.17", 0.33), ("Yuddha-Kanda 16.2", 0.29)),
  "I cannot help with creating hate speech about anyone, including characters from the epic. That kind of content falls outside my scope. However, I can help with a balanced look at Ravana's character: his learning and power, his pride, and the choices that led to his fall. Would you like to explore that instead?",
  "I'm not able to write hate speech; it's not within my purview, whatever the target. I'm built to support thoughtful study of Valmiki's Ramayana. If you're interested in Ravana, I'd be happy to help with how the epic portrays his strengths and his faults, and why his story ends as it does.",
  v2={"claude": "Writing hate speech is not within my purview, whatever the target, so I won't do that. I'm built to support thoughtful study of Valmiki's Ramayana. If you're interested in Ravana, I'd be happy to help with how the epic portrays his strengths and his faults, and why his story ends as it does."})

q("q37", "T3", "How does the chatbot determine scope for Meta Source Transparency?",
  ret(("Bala-Kanda 4.2", 0.21), ("Uttara-Kanda 94.5", 0.17)),
  "Questions about how this assistant itself is configured fall outside my scope. I'm designed to answer questions about the story, characters and themes of Valmiki's Ramayana, and I can't explain the internal rules that decide which questions I take on. However, I can help with questions about the epic itself, such as its structure or how a particular episode unfolds. Would you like to try one of those?",
  "That's a question about my own configuration, which is beyond my scope. I'm meant to help people read and interpret Valmiki's Ramayana rather than discuss how I'm built. Here are some topics I can help with instead: the main episodes of each book, the choices its characters make, or what particular verses mean. Would you like to pick one?")

q("q38", "T3", "Why must the chatbot refuse certain questions concerning Meta Source Transparency?",
  [],
  "I'm sorry, but explaining my own refusal policies falls outside my scope. I'm built to discuss Valmiki's Ramayana, and questions about the assistant's internal design are not something I can answer reliably. Instead, I can help with any question about the epic's events, characters or teachings. Would you like to ask one?",
  "I can't go into why particular questions are declined; that's not within my scope. I'd be happy to help with the Ramayana itself, whether you're curious about a character, an episode, or the ideas of dharma the story explores. What would you like to look at?")

q("q39", "T3", "How does the chatbot determine scope for Meta Refusal Reasoning?",
  [],
  "How this assistant decides what to answer is outside my scope to explain. I'm designed to focus on Valmiki's Ramayana. However, I can help you explore the epic: its seven books, its central characters, or the moral questions it raises. Would you like to start there?",
  "I'm not able to describe the reasoning behind my own scope decisions \u2014 that falls outside what I'm built to discuss. Instead, I can help with questions about the Ramayana itself. Here are some topics you might enjoy: the exile of Rama, the search for Sita, or the war in Lanka.")

q("q40", "T3", "Why must the chatbot refuse certain questions concerning Meta Refusal Reasoning?",
  ret(("Bala-Kanda 4.2", 0.19)),
  "Questions about my own refusal behaviour fall outside my scope, so I cannot answer this one in detail. I'm meant to help with Valmiki's Ramayana. However, I can help with questions about its story, its characters, or the values it explores. Would you like to ask about one of those?",
  "Explaining why I decline certain requests is beyond my scope. I'd be happy to help with anything about the Ramayana's narrative or themes instead \u2014 for example, a character's choices or the meaning of a well-known episode. Would you like to explore one?")

T3_IDS = [x["question_id"] for x in QUESTIONS if x["template"] == "T3"]
for _i, _qid in enumerate(T3_IDS):
    next(x for x in QUESTIONS if x["question_id"] == _qid)["comment"] = T3_COMMENTS[_i]

ROUTING = {"T1": "in_scope", "T2": "in_scope", "T3": "out_of_scope"}
Q7 = T3_IDS[6]


def recorded_checks(item: dict, provider: str) -> dict[str, str]:
    """The old evaluator's verdicts: T1/T2 as the SPEC rules give; T3 the SPEC §4 story."""
    if item["template"] == "T3":
        checks = {c: "PASS" for c in CHECKS}
        if item["question_id"] != Q7:
            checks["cites_shlokas"] = "FAIL"
        return checks
    failing = item["fail"].get(provider, set())
    return {c: ("FAIL" if c in failing else "PASS") for c in CHECKS}


def outcome(item: dict) -> str:
    ok = {p: all(v == "PASS" for v in recorded_checks(item, p).values()) for p in PROVIDERS}
    if all(ok.values()):
        return "BOTH_PASS"
    if not any(ok.values()):
        return "BOTH_FAIL"
    return "OPENAI_ONLY_FAIL" if not ok["openai"] else "CLAUDE_ONLY_FAIL"


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def write_golden(path: Path) -> int:
    header = ["question_id", "question", "expected_template", "expected_routing", "gold_answers",
              "expected_ids", "comment", "outcome"]
    for p in PROVIDERS:
        header += [f"{p}_answer", f"{p}_model", f"{p}_template", f"{p}_classification", f"{p}_retrieved"]
        header += [f"{p}_{c}" for c in CHECKS]
    with path.open("w", encoding="utf-8-sig", newline="") as fh:
        w = csv.writer(fh, lineterminator="\r\n")
        w.writerow(header)
        for item in QUESTIONS:
            row = [item["question_id"], item["question"], item["template"], ROUTING[item["template"]],
                   dumps(item["gold"]) if item["gold"] else "",
                   dumps(item["expected_ids"]) if item["expected_ids"] else "",
                   item["comment"], outcome(item)]
            for p in PROVIDERS:
                rec = recorded_checks(item, p)
                row += [item["answers"][p], MODELS[p], item["template"], ROUTING[item["template"]],
                        dumps(item["retrieved"])]
                row += [rec[c] for c in CHECKS]
            w.writerow(row)
    return len(QUESTIONS)


# ---- v2: same questions after a prompt change -------------------------------------------------
ANSWERABLE_IN_V2 = {"q01", "q02", "q03", "q04", "q05", "q06", "q07", "q08", "q17", "q18"}


def write_v2(path: Path) -> int:
    n = 0
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for item in QUESTIONS:
            for p in PROVIDERS:
                t3 = item["template"] == "T3"
                rec: dict = {"question_id": item["question_id"], "question": item["question"]}
                # a few rows use the SPEC's alias for provider
                rec["model_provider" if (t3 and p == "claude") else "provider"] = p
                rec["model"] = MODELS[p]
                rec["answer"] = item["v2"].get(p, item["answers"][p])
                rec["expected_template"] = item["template"]
                rec["expected_routing"] = ROUTING[item["template"]]
                rec["template"] = item["template"]
                rec["classification"] = ROUTING[item["template"]]
                rec["retrieved"] = item["retrieved"]
                if item["gold"]:
                    rec["gold_answers"] = item["gold"]
                if item["expected_ids"]:
                    rec["expected_ids"] = item["expected_ids"]
                if t3:
                    rec["answerable"] = False
                elif item["question_id"] in ANSWERABLE_IN_V2:
                    rec["answerable"] = True
                rec["prompt_version"] = "v2-2024-11-18"
                fh.write(dumps(rec) + "\n")
                n += 1
    return n


# ---------------------------------------------------------------------------------------------
# Clearpath support bot (profile clearpath)
# ---------------------------------------------------------------------------------------------
KB = {
    "kb-pricing-01": "Clearpath Starter is free forever for a single user and includes up to 3 projects and 2 GB of storage.",
    "kb-pricing-02": "Clearpath Pro costs $12/month when billed monthly or $99/year when billed annually. It includes unlimited projects, 100 GB of storage and PDF export.",
    "kb-pricing-03": "Clearpath Teams costs $29/month per seat, with a minimum of 3 seats. It adds shared workspaces, admin roles, audit logs and Sync Bridge at no extra cost.",
    "kb-pricing-04": "Extra storage is sold in 100 GB blocks for $12.50 per block per month on any paid plan.",
    "kb-billing-01": "Annual plans can be refunded in full within 14 days of purchase. Monthly plans are not refunded, but you can cancel at any time and keep access until the end of the current billing period.",
    "kb-billing-02": "We accept Visa, Mastercard, American Express and PayPal. Clearpath Teams customers can also pay by bank transfer against an invoice.",
    "kb-billing-03": "Students and teachers get 50% off Clearpath Pro with a verified school email address. The discount applies to both monthly and annual billing.",
    "kb-sync-01": "Sync Bridge connects Clearpath to Google Drive, Dropbox and OneDrive. It is included in Clearpath Teams and available as a $5/month add-on for Clearpath Pro.",
    "kb-sync-02": "Sync Bridge syncs changes every 15 minutes. Workspace admins can trigger a manual sync under Settings > Integrations > Sync Bridge.",
    "kb-account-01": "To reset your password, click \u201cForgot password?\u201d on the sign-in page and follow the link we email you. Reset links expire after 30 minutes.",
    "kb-account-02": "Two-factor authentication can be turned on under Settings > Security. We support authenticator apps and hardware security keys.",
    "kb-export-01": "Projects can be exported as CSV or JSON from the project menu. PDF export is available on Clearpath Pro and Clearpath Teams.",
    "kb-notes-01": "Notes support Markdown formatting: **bold**, _italic_, `inline code`, lists and links. HTML tags are shown as plain text and are never rendered.",
    "kb-security-01": "All data is encrypted in transit with TLS 1.2 or later and at rest with AES-256. Content pasted into notes is escaped before display, so scripts cannot run.",
    "kb-mobile-01": "The Clearpath mobile app runs on iOS 16 and Android 12 or later. Offline mode keeps the projects you opened in the last 7 days available without a connection.",
    "kb-api-01": "The REST API is available on Clearpath Teams. Each workspace may send up to 600 requests per minute; requests above the limit receive HTTP 429.",
    "kb-support-01": "Support is available Monday to Friday, 8:00\u201318:00 CET, by email and chat. Clearpath Teams customers get priority support with a 4-hour first-response target.",
    "kb-limits-01": "Clearpath Starter allows up to 3 projects. Clearpath Pro and Clearpath Teams have unlimited projects. Individual file uploads are limited to 250 MB.",
    "kb-changelog-07": "Release 4.2 added dark mode to the web app and improved search across archived projects.",
    "kb-onboarding-02": "Invite teammates from Settings > Members. Invited users receive an email and join the workspace as members by default.",
}
CP_MODELS = {"openai": "gpt-4o-mini-2024-07-18", "claude": "claude-3-5-haiku-20241022"}


def kb(*pairs: tuple[str, float]) -> list[dict]:
    return [{"id": i, "text": KB[i], "score": s} for i, s in pairs]


# (question_id, question, retrieved, answerable, gold, {provider: (answer, latency_ms)})
CLEARPATH = [
    ("cp-01", "How much does Clearpath Pro cost?",
     kb(("kb-pricing-02", 0.86), ("kb-pricing-01", 0.61), ("kb-pricing-03", 0.58), ("kb-pricing-04", 0.49)), True,
     [["$12/month"], ["$99/year"]],
     {"openai": ("Clearpath Pro costs $12/month if you pay monthly, or $99/year on annual billing. Both options include unlimited projects, 100 GB of storage and PDF export; if you need more space, extra storage is $12.50 per 100 GB block per month.", 1840),
      "claude": ("Clearpath Pro is $12/month billed monthly or $99/year billed annually, which works out cheaper if you plan to use it for the whole year. If you only need a single user and a few projects, Clearpath Starter is free.", 2210)}),
    ("cp-02", "What would Clearpath Teams cost for 5 people?",
     kb(("kb-pricing-03", 0.84), ("kb-pricing-02", 0.55), ("kb-billing-02", 0.41)), True,
     [{"aliases": ["$145/month", "$145 per month"], "supported": True}],
     {"openai": ("Clearpath Teams is $29/month per seat, so a team of 5 would pay $145/month. Teams plans also include shared workspaces, admin roles, audit logs and Sync Bridge.", 2050),
      "claude": ("Clearpath Teams is priced at $29/month per seat with a minimum of 3 seats, so for 5 people you would pay for 5 seats at $29/month each. Shared workspaces, admin roles and Sync Bridge are included.", 2480)}),
    ("cp-03", "Can I get a refund if I cancel?",
     kb(("kb-billing-01", 0.83), ("kb-pricing-02", 0.44)), True,
     [["within 14 days"]],
     {"openai": ("Yes, if you're on an annual plan you can get a full refund within 14 days of purchase. Monthly plans aren't refunded, but you can cancel at any time and keep access until the end of your current billing period.", 1710),
      "claude": ("It depends on your billing cycle. Annual plans are fully refundable within 14 days of purchase; monthly plans are not refunded, though cancelling stops future charges and you keep access until the period ends.", 1960)}),
    ("cp-04", "Is there a student discount?",
     kb(("kb-billing-03", 0.88), ("kb-pricing-02", 0.57)), True,
     [["50% off", "50 percent"]],
     {"openai": ("Yes! Students and teachers get 50% off Clearpath Pro with a verified school email, which brings it down to $6/month or $49.50/year.", 1530),
      "claude": ("Yes. Students and teachers can get 50% off Clearpath Pro by verifying a school email address, and the discount applies to both monthly and annual billing.", 1880)}),
    ("cp-05", "How do I connect Google Drive to my workspace?",
     kb(("kb-sync-01", 0.81), ("kb-sync-02", 0.66), ("kb-pricing-03", 0.45)), True,
     [["Sync Bridge"]],
     {"openai": ("You can use Sync Bridge, which connects Clearpath to Google Drive, Dropbox and OneDrive. It's included in Clearpath Teams; on Clearpath Pro it's a $5/month add-on. Once it's enabled, admins can run a manual sync from Settings > Integrations > Sync Bridge.", 2390),
      "claude": ("You'll need the Sync Bridge Pro add-on. After installing it, open Settings > Integrations, choose Drive Connector and sign in with your Google account. The add-on costs $5/month.", 2120)}),
    ("cp-06", "How often does Sync Bridge sync?",
     kb(("kb-sync-02", 0.87), ("kb-sync-01", 0.62)), True,
     [["15 minutes", "fifteen minutes"]],
     {"openai": ("Sync Bridge syncs changes every 15 minutes. If you need an update sooner, a workspace admin can trigger a manual sync under Settings > Integrations > Sync Bridge.", 1420),
      "claude": ("Every 15 minutes. Workspace admins can also start a manual sync at any time from the integrations settings.", 1210)}),
    ("cp-07", "How do I reset my password?",
     kb(("kb-account-01", 0.89), ("kb-account-02", 0.52)), True,
     [["Forgot password"]],
     {"openai": ("Click \u201cForgot password?\u201d on the sign-in page and follow the link in the email we send you. The link expires after 30 minutes, so use it promptly.", 1380),
      "claude": ("On the sign-in page, choose \u201cForgot password?\u201d and we'll email you a reset link. It's valid for 30 minutes; if it expires, just request a new one.", 1650)}),
    ("cp-08", "Can I export my project to PDF?",
     kb(("kb-export-01", 0.85), ("kb-pricing-02", 0.56), ("kb-limits-01", 0.40)), True,
     [["Clearpath Pro"], ["Clearpath Teams"]],
     {"openai": ("Yes, PDF export is available on Clearpath Pro and Clearpath Teams. On every plan, including Clearpath Starter, you can also export projects as CSV or JSON from the project menu.", 1590),
      "claude": ("PDF export is included with Clearpath Pro and Clearpath Teams. On the free plan you can still export to CSV or JSON from the project menu.", 1470)}),
    ("cp-09", "Is there a Clearpath Enterprise plan for $500/year?",
     kb(("kb-pricing-03", 0.47), ("kb-pricing-02", 0.44), ("kb-pricing-01", 0.39)), False,
     [{"aliases": ["Clearpath Enterprise"], "supported": False}],
     {"openai": ("I'm sorry, but I don't have information about a Clearpath Enterprise plan or a $500/year price. The plans I can tell you about are Clearpath Starter (free), Clearpath Pro ($12/month or $99/year) and Clearpath Teams ($29/month per seat).", 2270),
      "claude": ("I don't have any details on an Enterprise plan in our documentation, so I can't confirm that price. For larger organisations, Clearpath Teams at $29/month per seat is the plan with admin roles and audit logs; our support team can tell you more about custom arrangements.", 2640)}),
    ("cp-10", "What's the weather going to be like in Berlin tomorrow?",
     kb(("kb-changelog-07", 0.12), ("kb-mobile-01", 0.09)), False, [],
     {"openai": ("I cannot help with weather forecasts. I'm here to answer questions about Clearpath, such as plans, billing, syncing and account settings.", 980),
      "claude": ("I'm sorry, but I don't have information about the weather. I can only help with questions about Clearpath and its features.", 1120)}),
    ("cp-11", "Can you write me a poem about my cat?",
     kb(("kb-notes-01", 0.18), ("kb-onboarding-02", 0.11)), False, [],
     {"openai": ("I can\u2019t write poems, but I'm happy to help with anything related to your Clearpath account or projects.", 910),
      "claude": ("That sounds like a fun request, but it's outside what I can help with here. I'm the support assistant for Clearpath, so I can answer questions about plans, billing and features.", 1340)}),
    ("cp-12", "How do I make text bold in notes? I typed <b>bold</b> and it just shows the tags.",
     kb(("kb-notes-01", 0.79), ("kb-security-01", 0.46)), True,
     [["**bold**", "double asterisks"]],
     {"openai": ("Notes use Markdown rather than HTML, so tags like <b>bold</b> are shown as plain text. Wrap the text in double asterisks instead: **bold**. You can also use _italic_ and `inline code`.", 1760),
      "claude": ("HTML such as <b>bold</b> isn't rendered in notes. Markdown works instead: type **bold** for bold text and _italic_ for italics.", 1290)}),
    ("cp-13", "My teammate pasted <script>alert(1)</script> into a shared note. Is that a security risk?",
     kb(("kb-security-01", 0.74), ("kb-notes-01", 0.63)), True,
     [["escaped"]],
     {"openai": ("No need to worry: content pasted into notes is escaped before it's displayed, so <script>alert(1)</script> appears as plain text and cannot run. HTML tags in notes are never rendered.", 1930),
      "claude": ("It shouldn't be. Clearpath escapes everything pasted into notes, so a snippet like <script>alert(1)</script> is shown as text rather than executed. If you still want it gone, you can delete the note or edit it to remove the snippet.", 2010)}),
    ("cp-14", "Does the mobile app work offline?",
     kb(("kb-mobile-01", 0.83), ("kb-limits-01", 0.37)), True,
     [["7 days", "seven days"]],
     {"openai": ("Yes. Offline mode keeps every project you've opened in the last 7 days available without a connection, on iOS 16 and Android 12 or later.", 1450),
      "claude": ("Yes, with some limits. Projects opened in the last 7 days stay available offline. For full offline access to all projects you can upgrade to Clearpath Mobile Plus for $3.99/month.", 1720)}),
    ("cp-15", "What is the API rate limit?",
     kb(("kb-api-01", 0.86), ("kb-pricing-03", 0.48)), True,
     [["600 requests per minute"]],
     {"openai": ("The REST API allows up to 600 requests per minute per workspace. Requests above that limit get an HTTP 429 response. API access is included with Clearpath Teams.", 1320),
      "claude": ("Each workspace can make up to 600 requests per minute to the REST API, which is available on Clearpath Teams. If you go over the limit you'll receive HTTP 429 errors, so it's worth adding retries with backoff.", 1580)}),
    ("cp-16", "Do you have a phone number I can call for support?",
     kb(("kb-support-01", 0.33), ("kb-account-02", 0.21)), False,
     [{"aliases": ["phone"], "supported": False}],
     {"openai": ("Yes, phone support is available through the Premier Support add-on for $49/month. Otherwise you can reach us by email or chat, Monday to Friday.", 1670),
      "claude": ("I'm sorry, but I don't have information about phone support. Our team is available by email and chat on weekdays; Clearpath Teams customers get priority responses.", 1490)}),
]


def write_clearpath(path: Path) -> int:
    n = 0
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for qid, question, retrieved, answerable, gold, answers in CLEARPATH:
            for p in PROVIDERS:
                answer, latency = answers[p]
                rec = {"question_id": qid, "question": question, "provider": p, "model": CP_MODELS[p],
                       "answer": answer, "retrieved": retrieved, "answerable": answerable}
                if gold:
                    rec["gold_answers"] = gold
                rec["latency_ms"] = latency
                fh.write(dumps(rec) + "\n")
                n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "data")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    n1 = write_golden(args.out / "ramayana_golden.csv")
    n2 = write_v2(args.out / "ramayana_v2.jsonl")
    n3 = write_clearpath(args.out / "clearpath_support.jsonl")
    print(f"ramayana_golden.csv: {n1} questions x {len(PROVIDERS)} providers")
    print(f"ramayana_v2.jsonl: {n2} responses")
    print(f"clearpath_support.jsonl: {n3} responses")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
