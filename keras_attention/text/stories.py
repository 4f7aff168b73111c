"""Generated English stories for BERT's pretraining, and small labelled
tasks from the same world for its fine-tuning.

A seeded simulation, in the spirit of the bAbI world
(`keras_attention.data.babi`): in each story a woman and a man (drawn from
eight of each) move between places, see, pick up, put down and give
objects, meet, and the narrator now and then says where someone is. Each
event follows from the world as the previous sentences left it and
usually continues with the same person, named or as "she"/"he":

    Sarah went to the kitchen. She saw the apple in the kitchen. She
    picked up the apple. Then she walked to the garden. Tom is in the
    garden. Sarah met Tom in the garden. She gave the apple to Tom.

so the next sentence is predictable from the previous one (the people,
the pronoun, the place, the object), which next-sentence prediction
learns: a sentence of another story usually names other people, at other
places, with other objects. A masked word (a name, a place, an object, a
pronoun) is predictable from its context, which the masked language model
learns; and only the text tells which pronoun a name takes, by the
pronouns that follow it.

Three labelled tasks come from the same world:

- `generate_pronoun_task`: is the one person of a short story, always
  named, a "she" or a "he"? Fine-tuned on some names and tested on the
  others, only what the pretraining text taught of each name answers it.
- `generate_kind_task`: is the object of a short story food or a thing?
- `generate_statement_task`: a short story and a statement "Mary is in the
  garden."; true when the story leaves Mary in the garden. A false
  statement names a place the story also mentions where it can (the other
  person's, or an earlier one of the same person), so word overlap does
  not give the answer away.

Nothing is downloaded; the same seed gives the same text.
"""

import random

import numpy as np

from keras_attention import _validation

# Each story tells of one woman and one man of these; a name's pronoun is
# told only by the text.
WOMEN = ("Mary", "Sandra", "Julie", "Emma", "Anna", "Lucy", "Sarah", "Kate")
MEN = ("John", "Daniel", "Bill", "Fred", "Tom", "Peter", "Jack", "Paul")
PEOPLE = {**{name: "she" for name in WOMEN}, **{name: "he" for name in MEN}}
PLACES = ("kitchen", "garden", "office", "bedroom", "hallway", "bathroom",
          "cellar", "library")
# Two kinds of objects, told apart only by what people do with them
# ("ate the cake", "played with the kite").
FOODS = ("apple", "bread", "cake", "cheese", "pie", "banana")
THINGS = ("football", "book", "key", "hat", "kite", "ball")
OBJECTS = FOODS + THINGS
MOVES = ("went to", "walked to", "ran to", "moved to")
STATEMENT_CLASSES = ("false", "true")  # the statement task's labels
KIND_CLASSES = ("thing", "food")  # the kind task's labels
PRONOUN_CLASSES = ("he", "she")  # the pronoun task's labels


class _World:
    """Two people, their places and the objects, told sentence by
    sentence. `known` is where the text has said each person is."""

    def __init__(self, rng, things=None, use=True, person=None):
        self.rng = rng
        self.use_objects = use
        self.people = [rng.choice(WOMEN), rng.choice(MEN)]
        if person is not None:  # this person instead of the one of their kind
            self.people[PEOPLE[person] == "he"] = person
        rng.shuffle(self.people)
        self.place = {person: rng.choice(PLACES) for person in self.people}
        things = rng.sample(OBJECTS, 4) if things is None else things
        # object -> (place, holder); objects lie at places at first
        self.objects = {thing: (rng.choice(PLACES), None) for thing in things}
        self.known = {}  # person -> places the text gave, oldest first
        self.subject = None  # the person the last sentence was about
        self.located = ()  # the people the last sentence placed
        self.seen = set()  # (person, object) seen since the person moved
        self.met = False  # whether they met since either moved
        self.held = None  # (person, object) the last sentence gave them

    def _name(self, person, capital=True):
        """The person's name, or the pronoun when the last sentence was
        about them."""
        if person != self.subject:
            return person
        pronoun = PEOPLE[person]
        return pronoun.capitalize() if capital else pronoun

    def _locate(self, *people):
        for person in people:
            self.known.setdefault(person, []).append(self.place[person])
        self.located = people

    def _other(self, person):
        return self.people[1 - self.people.index(person)]

    def move(self, person):
        here = self.place[person]
        self.place[person] = self.rng.choice([p for p in PLACES if p != here])
        self.seen = {(who, t) for who, t in self.seen if who != person}
        self.met = False
        self._locate(person)
        verb = self.rng.choice(MOVES)
        if person == self.subject and self.rng.random() < 0.5:
            text = f"Then {PEOPLE[person]} {verb} the {self.place[person]}."
        else:
            text = f"{self._name(person)} {verb} the {self.place[person]}."
        return person, text

    def where(self, person):
        self._locate(person)
        return person, f"{self._name(person)} is in the {self.place[person]}."

    def see(self, person, thing):
        place = self.place[person]
        self.seen.add((person, thing))
        self._locate(person)
        return person, f"{self._name(person)} saw the {thing} in the {place}."

    def pick_up(self, person, thing):
        self.objects[thing] = (None, person)
        self.located, self.held = (), (person, thing)
        return person, f"{self._name(person)} picked up the {thing}."

    def put_down(self, person, thing):
        place = self.place[person]
        self.objects[thing] = (place, None)
        self._locate(person)
        return person, (f"{self._name(person)} put down the {thing} in the "
                        f"{place}.")

    def meet(self, person):
        other, place = self._other(person), self.place[person]
        self.met = True
        self._locate(person, other)
        return person, f"{self._name(person)} met {other} in the {place}."

    def give(self, person, thing):
        other = self._other(person)
        self.objects[thing] = (None, other)
        self.located, self.held = (), (other, thing)
        return other, f"{self._name(person)} gave the {thing} to {other}."

    def has(self, person, thing):
        self.located, self.held = (), (person, thing)
        return person, f"{self._name(person)} has the {thing} now."

    def use(self, person, thing):
        self.located, self.held = (), (person, thing)
        if thing in FOODS:
            del self.objects[thing]
            return person, f"{self._name(person)} ate the {thing}."
        return person, f"{self._name(person)} played with the {thing}."

    def event(self):
        """The next sentence: `(weight, action)` candidates that the world
        allows, most of them about the person of the last sentence."""
        rng = self.rng
        person = self.subject or rng.choice(self.people)
        if self.subject is not None and rng.random() < 0.25:
            person = self._other(person)
        place = self.place[person]
        other = self._other(person)
        lying = [t for t, (at, _) in self.objects.items() if at == place]
        held = [t for t, (_, holder) in self.objects.items()
                if holder == person]
        choices = [(1.2, lambda: self.move(person))]
        if person in self.known and person not in self.located:
            choices.append((1.5, lambda: self.where(person)))
        choices += [(2.0, lambda t=t: self.see(person, t)) for t in lying
                    if (person, t) not in self.seen]
        # a thing is picked up where it was seen
        choices += [(3.0, lambda t=t: self.pick_up(person, t))
                    for t in lying if (person, t) in self.seen]
        choices += [(1.0, lambda t=t: self.put_down(person, t)) for t in held]
        choices += [(0.5, lambda t=t: self.has(person, t)) for t in held
                    if (person, t) != self.held]
        if self.use_objects:
            choices += [(1.5, lambda t=t: self.use(person, t)) for t in held
                        if (person, t) != self.held]
        if self.place[other] == place and not self.met:
            choices.append((3.0, lambda: self.meet(person)))
            choices += [(1.5, lambda t=t: self.give(person, t)) for t in held]
        weights = [weight for weight, _ in choices]
        _, action = rng.choices(choices, weights=weights)[0]
        self.held = None
        self.subject, text = action()
        return text


def _story(rng, num_sentences, **world):
    world = _World(rng, **world)
    return world, [world.event() for _ in range(num_sentences)]


def _check_range(minimum_name, minimum, maximum_name, maximum):
    minimum = _validation.positive_int(minimum_name, minimum)
    maximum = _validation.positive_int(maximum_name, maximum)
    if maximum < minimum:
        raise ValueError(
            f"`{maximum_name}` must be at least `{minimum_name}`, received: "
            f"{minimum_name}={minimum}, {maximum_name}={maximum}"
        )
    return minimum, maximum


def _some_of(name, values, pool):
    """`values` as a list, checked to be a non-empty selection of `pool`."""
    values = list(values)
    if not values or any(value not in pool for value in values):
        raise ValueError(f"`{name}` must be some of {pool}, received: "
                         f"{name}={values!r}")
    return values


def generate_stories(num_documents, seed, min_sentences=6, max_sentences=10):
    """Ordered documents of generated English, for BERT's pretraining.

    Args:
        num_documents: int, the number of stories.
        seed: int; the same seed gives the same stories.
        min_sentences, max_sentences: ints, the range of sentences per
            story (uniform, both included).

    Returns:
        A list of documents, each a list of sentences (str) in order.

    Example:

    >>> from keras_attention.text.stories import generate_stories
    >>> documents = generate_stories(2, seed=0, min_sentences=3,
    ...                              max_sentences=3)
    >>> [len(document) for document in documents]
    [3, 3]
    >>> documents == generate_stories(2, seed=0, min_sentences=3,
    ...                               max_sentences=3)
    True
    """
    num_documents = _validation.positive_int("num_documents", num_documents)
    low, high = _check_range("min_sentences", min_sentences, "max_sentences",
                             max_sentences)
    rng = random.Random(seed)
    return [_story(rng, rng.randint(low, high))[1]
            for _ in range(num_documents)]


def _statement(world, rng):
    """`(statement, label)` about a person the story has placed."""
    person = rng.choice(sorted(world.known))
    true_place = world.place[person]
    if rng.random() < 0.5:
        return f"{person} is in the {true_place}.", 1
    # A wrong place the story mentions, where it can.
    other = world._other(person)
    mentioned = [p for p in world.known.get(other, []) + world.known[person]
                 if p != true_place]
    if mentioned:
        place = rng.choice(mentioned)
    else:
        place = rng.choice([p for p in PLACES if p != true_place])
    return f"{person} is in the {place}.", 0


def generate_statement_task(num_examples, seed, min_sentences=3,
                            max_sentences=4):
    """A true/false task on short stories: is the statement true at the
    end of the story?

    Each example is a fresh story of `min_sentences` to `max_sentences`
    sentences (as `generate_stories` tells them) that places at least one
    person, and a statement "NAME is in the PLACE." about a person it
    placed. Half the statements are true (the person's place at the end);
    a false one names another place the story mentions (the other
    person's, or one the person left) when there is one, else a random
    place.

    Args:
        num_examples: int.
        seed: int; the same seed gives the same examples.
        min_sentences, max_sentences: ints, the story length range.

    Returns:
        `(stories, statements, labels)`: two lists of str (a story's
        sentences joined by spaces) and an int32 array of labels, 1 for
        true and 0 for false (`STATEMENT_CLASSES`).

    Example:

    >>> from keras_attention.text.stories import generate_statement_task
    >>> stories, statements, labels = generate_statement_task(4, seed=0)
    >>> len(stories), len(statements), labels.shape
    (4, 4, (4,))
    >>> all(s.endswith(".") and " is in the " in s for s in statements)
    True
    """
    num_examples = _validation.positive_int("num_examples", num_examples)
    low, high = _check_range("min_sentences", min_sentences, "max_sentences",
                             max_sentences)
    rng = random.Random(seed)
    stories, statements, labels = [], [], []
    while len(stories) < num_examples:
        world, sentences = _story(rng, rng.randint(low, high))
        if not world.known:
            continue
        statement, label = _statement(world, rng)
        stories.append(" ".join(sentences))
        statements.append(statement)
        labels.append(label)
    return stories, statements, np.asarray(labels, np.int32)


def generate_kind_task(num_examples, seed, objects=OBJECTS, min_sentences=3,
                       max_sentences=4):
    """A task that needs word meaning: is the object of a short story food
    or a thing?

    Each story tells of one object, drawn from `objects`: it opens with
    someone seeing it ("Mary saw the cake in the garden.") and goes on as
    `generate_stories` tells, except that nobody eats or plays with it,
    the only sentences that tell the kinds apart. Label 1 for `FOODS`, 0
    for `THINGS` (`KIND_CLASSES`). Fine-tuned on some objects and tested
    on others, a model can only tell the kind of an object it has no label
    for from what the pretraining text does with it.

    Args:
        num_examples: int.
        seed: int; the same seed gives the same examples.
        objects: the objects to draw from (some of `OBJECTS`).
        min_sentences, max_sentences: ints, the story length range.

    Returns:
        `(stories, labels)`: a list of str (sentences joined by spaces)
        and an int32 array.

    Example:

    >>> from keras_attention.text.stories import generate_kind_task
    >>> stories, labels = generate_kind_task(2, seed=0, objects=["pie"])
    >>> stories[0].split()[1:3], labels.tolist()
    (['saw', 'the'], [1, 1])
    """
    num_examples = _validation.positive_int("num_examples", num_examples)
    low, high = _check_range("min_sentences", min_sentences, "max_sentences",
                             max_sentences)
    objects = _some_of("objects", objects, OBJECTS)
    rng = random.Random(seed)
    stories, labels = [], []
    for _ in range(num_examples):
        thing = rng.choice(objects)
        world = _World(rng, things=[thing], use=False)
        person = rng.choice(world.people)
        world.objects[thing] = (world.place[person], None)
        world.subject, first = world.see(person, thing)
        sentences = [first] + [world.event()
                               for _ in range(rng.randint(low, high) - 1)]
        stories.append(" ".join(sentences))
        labels.append(int(thing in FOODS))
    return stories, np.asarray(labels, np.int32)


def generate_pronoun_task(num_examples, seed, names=tuple(PEOPLE),
                          min_sentences=1, max_sentences=3):
    """A task that needs what the text tells of names: is the one person
    of a short story a "she" or a "he"?

    Each story tells of one person drawn from `names`, always by name, so
    no pronoun gives the answer: they move, are said to be somewhere and
    see objects ("Sarah went to the office. Sarah saw the cake in the
    office."). Label 1 for a name that `generate_stories` refers to as
    "she", 0 for "he" (`PRONOUN_CLASSES`). Fine-tuned on some names and
    tested on the others, a model can only tell the pronoun of a name it
    has no label for from the pretraining text, where pronouns follow
    every name.

    Args:
        num_examples: int.
        seed: int; the same seed gives the same examples.
        names: the names to draw from (some of `PEOPLE`).
        min_sentences, max_sentences: ints, the story length range.

    Returns:
        `(stories, labels)`: a list of str (sentences joined by spaces)
        and an int32 array.

    Example:

    >>> from keras_attention.text.stories import generate_pronoun_task
    >>> stories, labels = generate_pronoun_task(2, seed=0, names=["Tom"])
    >>> stories[0].split()[0], labels.tolist()
    ('Tom', [0, 0])
    """
    num_examples = _validation.positive_int("num_examples", num_examples)
    low, high = _check_range("min_sentences", min_sentences, "max_sentences",
                             max_sentences)
    names = _some_of("names", names, tuple(PEOPLE))
    rng = random.Random(seed)
    stories, labels = [], []
    for _ in range(num_examples):
        person = rng.choice(names)
        world = _World(rng, person=person)
        sentences, last = [], None
        for _ in range(rng.randint(low, high)):
            world.subject = None  # the name, never a pronoun
            # "is in" only after a sentence that did not place them
            actions = ["move", "see"] + (["where"] if last == "see" else [])
            last = rng.choice(actions)
            if last == "move":
                sentences.append(world.move(person)[1])
            elif last == "where":
                sentences.append(world.where(person)[1])
            else:
                thing = rng.choice(OBJECTS)
                world.objects[thing] = (world.place[person], None)
                sentences.append(world.see(person, thing)[1])
        stories.append(" ".join(sentences))
        labels.append(int(PEOPLE[person] == "she"))
    return stories, np.asarray(labels, np.int32)
