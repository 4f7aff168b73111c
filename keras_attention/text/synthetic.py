"""A seeded English→German parallel corpus generated from a small grammar.

The translator demo trains on this corpus, so it needs no download. Each pair
is one grammatical structure rendered in both languages, so the German side
is a correct translation by construction: regular enough for a small
Transformer to learn in minutes on a CPU, structured enough that translation
is more than word substitution.

Lexicon: 71 nouns (people, animals, things, food, places, documents) with
German gender and irregular plurals (men/Männer, mice/Mäuse, knives/Messer);
30 adjectives; 36 transitive verbs (English 3sg, base, past, participle;
German 3sg, 3pl, participle with haben), including strong (sieht, liest),
inseparable (besucht) and separable ones (ruft ... an, angerufen); 12 time
adverbs; 6 prepositions with the dative; 4 conjunctions. Verbs, adjectives and
prepositions select semantic noun classes, so sentences mostly make sense.
20000 sentences use about 320 distinct lower-cased word forms in English and
440 in German, where inflection multiplies the forms.

Grammar: subject, verb, object and an optional prepositional phrase; an
optional leading time adverb; an optional subordinate clause (because/weil,
while/während, although/obwohl, when/wenn or, in the past, als) after or
before the main clause. Noun phrases: definite or indefinite article (none in
the indefinite plural), optional adjective, noun in singular or plural.

* Agreement: German articles and adjective endings follow gender, number and
  case (nominative subject, accusative object, dative after prepositions;
  weak endings after der, mixed after ein, strong without article); dative
  plurals add -n (mit den Hunden); in dem becomes im; English a/an follows
  the next word; the verb agrees with the subject's number.
* Tense: English present, present perfect (has seen) and simple past (saw);
  German present and perfect (hat ... gesehen) for both of the latter. Past
  adverbs (yesterday) take the past, habitual ones (every day) the present.
* Word order: German is verb-second, so a leading adverb or subordinate
  clause puts the finite verb before the subject (Heute sieht der Mann den
  Hund.); participles and separable particles close the clause; subordinate
  clauses are verb-final (..., weil die Frau das Buch liest.).
* Orthography: initial capital, capitalised German nouns, final period, a
  comma at German clause boundaries (in English after a leading clause only).

Sentences with fewer than 4 or more than 20 words on either side are
resampled. `generate_pairs` draws from `random.Random(seed)`;
`synthetic_corpus` splits distinct English sentences into train/val/test.
"""

import functools
import random
from dataclasses import dataclass
from typing import NamedTuple

MIN_WORDS, MAX_WORDS = 4, 20


class Noun(NamedTuple):
    english: str
    english_plural: str
    gender: str  # "m", "f" or "n"
    german: str
    german_plural: str
    classes: str  # p person, a animal, t thing, f food, l place, d document


class Verb(NamedTuple):
    english: str  # base form, used for plural subjects
    english_3sg: str
    english_past: str
    english_participle: str
    german_3sg: str
    german_3pl: str
    german_participle: str
    particle: str  # separable prefix ("" if none)
    subjects: str  # noun classes allowed as subject
    objects: str  # noun classes allowed as object


# english_sg english_pl gender german_sg german_pl classes
_NOUN_TABLE = """
man men m Mann Männer p|woman women f Frau Frauen p|child children n Kind Kinder p
girl girls n Mädchen Mädchen p|teacher teachers m Lehrer Lehrer p
doctor doctors m Arzt Ärzte p|friend friends m Freund Freunde p
sister sisters f Schwester Schwestern p|brother brothers m Bruder Brüder p
mother mothers f Mutter Mütter p|father fathers m Vater Väter p
baker bakers m Bäcker Bäcker p|king kings m König Könige p
queen queens f Königin Königinnen p|dog dogs m Hund Hunde a|cat cats f Katze Katzen a
horse horses n Pferd Pferde a|bird birds m Vogel Vögel a|mouse mice f Maus Mäuse a
cow cows f Kuh Kühe a|fish fish m Fisch Fische a|sheep sheep n Schaf Schafe a
pig pigs n Schwein Schweine a|duck ducks f Ente Enten a|fox foxes m Fuchs Füchse a
wolf wolves m Wolf Wölfe a|car cars n Auto Autos t|table tables m Tisch Tische t
chair chairs m Stuhl Stühle t|door doors f Tür Türen t
window windows n Fenster Fenster t|box boxes f Kiste Kisten t
bag bags f Tasche Taschen t|bottle bottles f Flasche Flaschen t
cup cups f Tasse Tassen t|glass glasses n Glas Gläser t|knife knives n Messer Messer t
ball balls m Ball Bälle t|key keys m Schlüssel Schlüssel t|lamp lamps f Lampe Lampen t
clock clocks f Uhr Uhren t|bicycle bicycles n Fahrrad Fahrräder t
picture pictures n Bild Bilder t|hat hats m Hut Hüte t|shoe shoes m Schuh Schuhe t
umbrella umbrellas m Regenschirm Regenschirme t|apple apples m Apfel Äpfel f
cake cakes m Kuchen Kuchen f|egg eggs n Ei Eier f|banana bananas f Banane Bananen f
pear pears f Birne Birnen f|potato potatoes f Kartoffel Kartoffeln f
tomato tomatoes f Tomate Tomaten f|sausage sausages f Wurst Würste f
house houses n Haus Häuser l|garden gardens m Garten Gärten l|park parks m Park Parks l
school schools f Schule Schulen l|church churches f Kirche Kirchen l
kitchen kitchens f Küche Küchen l|room rooms n Zimmer Zimmer l
shop shops m Laden Läden l|city cities f Stadt Städte l|village villages n Dorf Dörfer l
forest forests m Wald Wälder l|book books n Buch Bücher d
letter letters m Brief Briefe d|newspaper newspapers f Zeitung Zeitungen d
map maps f Karte Karten d|story stories f Geschichte Geschichten d
photo photos n Foto Fotos d
"""

# english german classes ("*" = any noun)
_ADJECTIVE_TABLE = """
big groß *|small klein *|old alt *|new neu *|beautiful schön *|ugly hässlich *
famous berühmt *|strange seltsam *|young jung pa|happy glücklich pa|sad traurig pa
tired müde pa|hungry hungrig pa|friendly freundlich pa|angry wütend pa|lazy faul pa
brave mutig pa|fast schnell pat|red rot atfld|blue blau atfld|green grün atfld
black schwarz atfld|white weiß atfld|yellow gelb atfld|heavy schwer atf
clean sauber tl|dirty schmutzig patl|empty leer tl|long lang ld|cold kalt tfl
"""

# english: base 3sg past participle | german: 3sg 3pl participle [particle]
# | subject classes | object classes ("_" joins English multi-word verbs)
_VERB_TABLE = """
see sees saw seen|sieht sehen gesehen|pa|patfld
read reads read read|liest lesen gelesen|p|d
eat eats ate eaten|isst essen gegessen|pa|f
take takes took taken|nimmt nehmen genommen|p|tfd
carry carries carried carried|trägt tragen getragen|pa|atfd
catch catches caught caught|fängt fangen gefangen|pa|at
wash washes washed washed|wäscht waschen gewaschen|p|pat
find finds found found|findet finden gefunden|pa|patfd
buy buys bought bought|kauft kaufen gekauft|p|atfld
look_for looks_for looked_for looked_for|sucht suchen gesucht|pa|patfd
paint paints painted painted|malt malen gemalt|p|patl
build builds built built|baut bauen gebaut|p|tl
need needs needed needed|braucht brauchen gebraucht|pa|ptfd
love loves loved loved|liebt lieben geliebt|pa|pafl
know knows knew known|kennt kennen gekannt|pa|pald
hear hears heard heard|hört hören gehört|pa|pa
open opens opened opened|öffnet öffnen geöffnet|p|td
write writes wrote written|schreibt schreiben geschrieben|p|d
draw draws drew drawn|zeichnet zeichnen gezeichnet|p|patl
cook cooks cooked cooked|kocht kochen gekocht|p|f
clean cleans cleaned cleaned|putzt putzen geputzt|p|tl
repair repairs repaired repaired|repariert reparieren repariert|p|t
break breaks broke broken|zerbricht zerbrechen zerbrochen|pa|t
throw throws threw thrown|wirft werfen geworfen|p|tf
meet meets met met|trifft treffen getroffen|pa|pa
bring brings brought brought|bringt bringen gebracht|pa|atfd
feed feeds fed fed|füttert füttern gefüttert|p|pa
visit visits visited visited|besucht besuchen besucht|p|pl
sell sells sold sold|verkauft verkaufen verkauft|p|atfd
forget forgets forgot forgotten|vergisst vergessen vergessen|p|ptd
like likes liked liked|mag mögen gemocht|pa|patfld
call calls called called|ruft rufen angerufen an|p|p
invite invites invited invited|lädt laden eingeladen ein|p|p
pick_up picks_up picked_up picked_up|holt holen abgeholt ab|p|pt
look_at looks_at looked_at looked_at|schaut schauen angeschaut an|pa|patld
tidy_up tidies_up tidied_up tidied_up|räumt räumen aufgeräumt auf|p|l
"""

# english: (german, tense): "present" habitual, "past" past-only, "any" both
ADVERBS = {
    "now": ("jetzt", "present"), "every day": ("jeden Tag", "present"),
    "often": ("oft", "present"), "sometimes": ("manchmal", "present"),
    "in the morning": ("am Morgen", "present"),
    "in the evening": ("am Abend", "present"),
    "at night": ("in der Nacht", "present"), "on Sunday": ("am Sonntag", "present"),
    "today": ("heute", "any"), "yesterday": ("gestern", "past"),
    "last week": ("letzte Woche", "past"), "two days ago": ("vor zwei Tagen", "past"),
}
# english: (german, noun classes it takes); all govern the dative here
PREPOSITIONS = {
    "in": ("in", "l"), "on": ("auf", "t"), "with": ("mit", "pat"),
    "next to": ("neben", "patl"), "under": ("unter", "t"), "behind": ("hinter", "tl"),
}
# english: (german in the present, german in the past)
CONJUNCTIONS = {"because": ("weil", "weil"), "while": ("während", "während"),
                "although": ("obwohl", "obwohl"), "when": ("wenn", "als")}


def _rows(table):
    return [row.split() for line in table.split("\n") for row in line.split("|") if row]


NOUNS = {row[0]: Noun(*row) for row in _rows(_NOUN_TABLE)}
ADJECTIVES = {row[0]: (row[1], row[2]) for row in _rows(_ADJECTIVE_TABLE)}


def _verb(line):
    english, german, subjects, objects = (part.split() for part in line.split("|"))
    english = [form.replace("_", " ") for form in english]
    german += [""] * (4 - len(german))  # no separable particle
    return Verb(*english, *german, *subjects, *objects)


VERBS = {verb.english: verb for verb in map(_verb, _VERB_TABLE.split("\n")[1:-1])}

# articles by case, for m f n (and plural for the definite one)
_DEFINITE = dict(nom="der die das die", acc="den die das die", dat="dem der dem den")
_INDEFINITE = dict(nom="ein eine ein", acc="einen eine ein", dat="einem einer einem")
_SLOT = {"m": 0, "f": 1, "n": 2}


@dataclass(frozen=True)
class NounPhrase:
    noun: str  # key of NOUNS (English singular)
    plural: bool = False
    definite: bool = True
    adjective: str | None = None  # key of ADJECTIVES


@dataclass(frozen=True)
class Place:
    preposition: str  # key of PREPOSITIONS
    phrase: NounPhrase


@dataclass(frozen=True)
class Clause:
    subject: NounPhrase
    verb: str  # key of VERBS (English base form)
    obj: NounPhrase
    tense: str = "present"  # "present", "perfect" or "past"
    place: Place | None = None


@dataclass(frozen=True)
class Sentence:
    main: Clause
    adverb: str | None = None  # key of ADVERBS
    conjunction: str | None = None  # key of CONJUNCTIONS
    subordinate: Clause | None = None
    subordinate_first: bool = False


# --- English -----------------------------------------------------------------


def english_noun_phrase(phrase):
    """'the old dogs', 'an umbrella', 'big apples'."""
    noun = NOUNS[phrase.noun]
    words = [noun.english_plural if phrase.plural else noun.english]
    if phrase.adjective:
        words.insert(0, phrase.adjective)
    if phrase.definite:
        words.insert(0, "the")
    elif not phrase.plural:
        words.insert(0, "an" if words[0][0] in "aeiou" else "a")
    return " ".join(words)


def _english_verb(clause):
    verb, plural = VERBS[clause.verb], clause.subject.plural
    if clause.tense == "past":
        return verb.english_past
    if clause.tense == "perfect":
        return ("have " if plural else "has ") + verb.english_participle
    return verb.english if plural else verb.english_3sg


def english_clause(clause):
    words = [english_noun_phrase(clause.subject), _english_verb(clause)]
    words.append(english_noun_phrase(clause.obj))
    if clause.place:
        words += [clause.place.preposition, english_noun_phrase(clause.place.phrase)]
    return " ".join(words)


def english_sentence(sentence):
    main = english_clause(sentence.main)
    if sentence.adverb:
        main = f"{sentence.adverb} {main}"
    if sentence.subordinate:
        sub = f"{sentence.conjunction} {english_clause(sentence.subordinate)}"
        main = f"{sub}, {main}" if sentence.subordinate_first else f"{main} {sub}"
    return _capitalise(main) + "."


# --- German ------------------------------------------------------------------


def adjective_ending(gender, case, plural, definite):
    """Weak (after der), mixed (after ein) or strong (no article) ending."""
    if plural:
        return "en" if definite or case == "dat" else "e"
    if case == "dat" or (gender == "m" and case == "acc"):
        return "en"
    if definite or gender == "f":
        return "e"
    return "er" if gender == "m" else "es"


def german_noun_phrase(phrase, case):
    """A German noun phrase in case "nom", "acc" or "dat"."""
    noun = NOUNS[phrase.noun]
    words = [noun.german_plural if phrase.plural else noun.german]
    if phrase.plural and case == "dat" and words[0][-1] not in "ns":
        words[0] += "n"
    if phrase.adjective:
        stem = ADJECTIVES[phrase.adjective][0].removesuffix("e")
        ending = adjective_ending(noun.gender, case, phrase.plural, phrase.definite)
        words.insert(0, stem + ending)
    slot = 3 if phrase.plural else _SLOT[noun.gender]
    if phrase.definite:
        words.insert(0, _DEFINITE[case].split()[slot])
    elif not phrase.plural:
        words.insert(0, _INDEFINITE[case].split()[slot])
    return " ".join(words)


def _german_place(place):
    phrase = german_noun_phrase(place.phrase, "dat")
    preposition = PREPOSITIONS[place.preposition][0]
    if preposition == "in" and phrase.startswith("dem "):
        return "im " + phrase.removeprefix("dem ")
    return f"{preposition} {phrase}"


def german_clause(clause, order="main"):
    """order: "main" (S V O), "inverted" (V S O) or "final" (S O V)."""
    verb, plural = VERBS[clause.verb], clause.subject.plural
    subject = german_noun_phrase(clause.subject, "nom")
    middle = [german_noun_phrase(clause.obj, "acc")]
    if clause.place:
        middle.append(_german_place(clause.place))
    if clause.tense == "present":
        finite = verb.german_3pl if plural else verb.german_3sg
        right = [verb.particle] if verb.particle else []
        if order == "final":
            finite, right = verb.particle + finite, []
    else:
        finite, right = ("haben" if plural else "hat"), [verb.german_participle]
    if order == "final":
        words = [subject, *middle, *right, finite]
    elif order == "inverted":
        words = [finite, subject, *middle, *right]
    else:
        words = [subject, finite, *middle, *right]
    return " ".join(words)


def german_sentence(sentence):
    inverted = bool(sentence.adverb or sentence.subordinate_first)
    main = german_clause(sentence.main, "inverted" if inverted else "main")
    if sentence.adverb:
        main = f"{ADVERBS[sentence.adverb][0]} {main}"
    if sentence.subordinate:
        present, past = CONJUNCTIONS[sentence.conjunction]
        conjunction = past if sentence.subordinate.tense == "past" else present
        sub = f"{conjunction} {german_clause(sentence.subordinate, 'final')}"
        main = f"{sub}, {main}" if sentence.subordinate_first else f"{main}, {sub}"
    return _capitalise(main) + "."


def _capitalise(text):
    return text[:1].upper() + text[1:]


def render(sentence):
    """The (english, german) pair for a `Sentence`.

    >>> render(Sentence(Clause(NounPhrase("man"), "see", NounPhrase("dog")),
    ...                 adverb="today"))
    ('Today the man sees the dog.', 'Heute sieht der Mann den Hund.')
    """
    return english_sentence(sentence), german_sentence(sentence)


# --- Sampling ----------------------------------------------------------------


@functools.cache
def _nouns_of(classes, avoid=None):
    nouns = [noun for noun in NOUNS.values() if noun.classes in classes]
    return [noun.english for noun in nouns if noun.english != avoid]


@functools.cache
def _adjectives_for(noun):
    classes = NOUNS[noun].classes
    return [a for a, (_, c) in ADJECTIVES.items() if c == "*" or classes in c]


def _random_phrase(rng, classes, avoid=None):
    noun = rng.choice(_nouns_of(classes, avoid))
    adjective = rng.choice(_adjectives_for(noun)) if rng.random() < 0.3 else None
    return NounPhrase(noun, rng.random() < 0.35, rng.random() < 0.6, adjective)


def _random_clause(rng, tense):
    verb = VERBS[rng.choice(list(VERBS))]
    subject = _random_phrase(rng, verb.subjects)
    obj = _random_phrase(rng, verb.objects, avoid=subject.noun)
    place = None
    if rng.random() < 0.3:
        preposition = rng.choice(list(PREPOSITIONS))
        place = Place(preposition, _random_phrase(rng, PREPOSITIONS[preposition][1]))
    return Clause(subject, verb.english, obj, tense, place)


def _random_sentence(rng):
    adverb, tenses = None, ["present", "present", "perfect", "past"]
    if rng.random() < 0.35:
        adverb = rng.choice(list(ADVERBS))
        tenses = {"present": ["present"], "past": ["past"]}.get(
            ADVERBS[adverb][1], ["present", "perfect"]
        )
    tense = rng.choice(tenses)
    main = _random_clause(rng, tense)
    if rng.random() >= 0.35:
        return Sentence(main, adverb)
    sub_tense = "past" if tense == "past" else rng.choice(["present", "perfect"])
    subordinate = _random_clause(rng, sub_tense)
    first = adverb is None and rng.random() < 0.3
    return Sentence(main, adverb, rng.choice(list(CONJUNCTIONS)), subordinate, first)


def _pair_stream(rng):
    """Endless rendered pairs with 4..20 words on both sides."""
    while True:
        pair = render(_random_sentence(rng))
        if all(MIN_WORDS <= len(side.split()) <= MAX_WORDS for side in pair):
            yield pair


def _check_int(name, value, non_negative=True):
    valid = isinstance(value, int) and not isinstance(value, bool)
    if not valid or (non_negative and value < 0):
        kind = "a non-negative int" if non_negative else "an int"
        raise ValueError(f"{name} must be {kind}, received: {name}={value!r}")


def generate_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    """`count` (english, german) pairs from random.Random(seed); deterministic."""
    _check_int("count", count)
    _check_int("seed", seed, non_negative=False)
    stream = _pair_stream(random.Random(seed))
    return [next(stream) for _ in range(count)]


def synthetic_corpus(
    train_size: int = 20000, val_size: int = 500, test_size: int = 500, seed: int = 0
) -> dict[str, list[tuple[str, str]]]:
    """Splits 'train', 'val', 'test'; no English sentence occurs in two splits.

    Pairs are the distinct-English prefix of the `generate_pairs(..., seed)`
    stream: val first, then test, then train, so val and test do not depend
    on `train_size`. Deterministic for a seed.
    """
    sizes = {"val": val_size, "test": test_size, "train": train_size}
    for name, size in sizes.items():
        _check_int(f"{name}_size", size)
    _check_int("seed", seed, non_negative=False)
    stream, seen = _pair_stream(random.Random(seed)), set()
    splits = {}
    for name, size in sizes.items():
        splits[name] = []
        while len(splits[name]) < size:
            english, german = next(stream)
            if english not in seen:
                seen.add(english)
                splits[name].append((english, german))
    return {name: splits[name] for name in ("train", "val", "test")}
