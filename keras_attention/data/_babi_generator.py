"""bAbI tasks 1 and 2 generated: a seeded simulation of the bAbI world
(Weston et al. 2015), written in the release's format, so the answers are
right by construction and nothing is downloaded.

`generate_babi` returns the text, `write_babi` writes it; read it back
with `keras_attention.data.babi.parse_babi` or `read_babi`. The names here
are importable from `keras_attention.data.babi`: import them from there.
"""

import pathlib
import random

from keras_attention import _validation

TASKS = (1, 2)  # the tasks generate_babi makes
PEOPLE = ("Mary", "John", "Sandra", "Daniel")
PLACES = ("bathroom", "hallway", "garden", "office", "bedroom", "kitchen")
OBJECTS = ("football", "apple", "milk")
MOVES = ("moved to", "went to", "journeyed to", "travelled to", "went back to")
GETS = ("got", "picked up", "grabbed", "took")
DROPS = ("dropped", "discarded", "put down", "left")
QUESTIONS_PER_STORY = 5


class _World:
    """Where people are, who holds what, and the line that says so."""

    def __init__(self, rng):
        self.rng = rng
        self.place = {}  # person -> (place, line ID of the move)
        # object -> (place, holder, line ID, ID of the move that placed
        # it): held, place is None; untouched, the line IDs are None and
        # it lies at a place no sentence has named.
        self.objects = {name: (rng.choice(PLACES), None, None, None)
                        for name in OBJECTS}

    def move(self, person, line_id):
        here = self.place.get(person, (None,))[0]
        there = self.rng.choice([p for p in PLACES if p != here])
        self.place[person] = (there, line_id)
        return f"{person} {self.rng.choice(MOVES)} the {there}."

    def get(self, person, thing, line_id):
        self.objects[thing] = (None, person, line_id, None)
        return f"{person} {self.rng.choice(GETS)} the {thing} there."

    def drop(self, person, thing, line_id):
        place, moved = self.place[person]
        self.objects[thing] = (place, None, line_id, moved)
        return f"{person} {self.rng.choice(DROPS)} the {thing}."

    def statement(self, task, line_id):
        """A random event that the world allows, told as a sentence: a
        move (task 1 always, task 2 six times in ten), else a pick-up or,
        one time in two, a drop."""
        rng, people = self.rng, list(PEOPLE)
        draw = 0.0 if task == 1 else rng.random()
        gets, drops = [], []
        for thing, (place, holder, _, _) in self.objects.items():
            if holder is not None:
                drops.append((self.drop, holder, thing))
            else:
                gets += [(self.get, person, thing) for person in people
                         if self.place.get(person, (None,))[0] == place]
        actions = gets if draw >= 0.8 or not drops else drops
        if draw < 0.6 or not actions:
            return self.move(rng.choice(people), line_id)
        action, person, thing = rng.choice(actions)
        return action(person, thing, line_id)

    def question(self, task):
        """(question, answer, supporting IDs), or None if none is known."""
        if task == 1:
            if not self.place:
                return None
            person = self.rng.choice(sorted(self.place))
            place, line_id = self.place[person]
            return f"Where is {person}?", place, (line_id,)
        known = [thing for thing, (_, _, line_id, _) in self.objects.items()
                 if line_id is not None]
        if not known:
            return None
        thing = self.rng.choice(known)
        place, holder, line_id, moved = self.objects[thing]
        if holder is not None:  # where the holder is now
            place, moved = self.place[holder]
        return f"Where is the {thing}?", place, (line_id, moved)


def _story(task, rng, questions):
    """The lines of one story with `questions` questions."""
    world, lines = _World(rng), []
    asked = 0
    while asked < questions:
        count = 2 if task == 1 else rng.randint(2, 6)
        for _ in range(count):
            line_id = len(lines) + 1
            lines.append(f"{line_id} {world.statement(task, line_id)}")
        asked_question = world.question(task)
        if asked_question is not None:
            question, answer, support = asked_question
            ids = " ".join(str(value) for value in support)
            lines.append(f"{len(lines) + 1} {question} \t{answer}\t{ids}")
            asked += 1
    return lines


def generate_babi(task, num_stories, seed):
    """The text of a generated bAbI file.

    Task 1, single supporting fact: people move ("Mary went to the
    kitchen."), the question is "Where is Mary?"; two statements before
    each question, as in bAbI. Task 2, two supporting facts: people also
    pick up and drop objects ("John picked up the apple there.", "John
    discarded the apple."), the question is "Where is the apple?", answered
    by the last sentence about the apple and the holder's last move before
    it (or since, while held); two to six statements before each question.
    Objects start at unnamed places and are picked up only where they lie.

    Args:
        task: 1 or 2.
        num_stories: the number of questions (samples, as `parse_babi`
            counts them); stories hold five questions each, as in bAbI,
            the last one fewer if needed. bAbI's "1k" sets hold 1,000.
        seed: int; the same seed gives the same text.

    Returns:
        str, lines ending with "\\n".
    """
    _validation.choice("task", task, TASKS)
    num_stories = _validation.positive_int("num_stories", num_stories)
    rng = random.Random(seed)
    lines = []
    for first in range(0, num_stories, QUESTIONS_PER_STORY):
        questions = min(QUESTIONS_PER_STORY, num_stories - first)
        lines += _story(task, rng, questions)
    return "\n".join(lines) + "\n"


def write_babi(path, task, num_stories, seed):
    """Write `generate_babi(task, num_stories, seed)` to `path` (UTF-8);
    returns the path as a `pathlib.Path`."""
    path = pathlib.Path(_validation.path("path", path))
    path.write_text(generate_babi(task, num_stories, seed), encoding="utf-8")
    return path
