"""deploybot.toml: found where it should be, read into frozen models, every problem named by
its key path, entries checked against each other, and overlaps with the variables found."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config.settings_file import FileConfig, FileError, conflicts, load, locate, read
from bot.core.people import Identity, Written
from tests.people_kinds import KINDS

SLACK, EMAIL = "slack", "email"  # the kinds of [people.NAME]'s ids

EXAMPLE = """
[people.alice]
slack = "U012AB3CD"
email = ["alice@example.com", "Alice@Corp.Example.com"]

[people.bob]
slack = "U045EF6GH"
email = ["bob@example.com"]

[people.carol]
email = "carol@example.com"

[groups]
sre = ["alice", "bob"]

[environments.production]
protected = true
approvers = ["group:sre", "carol"]
approver_must_differ = true
may_lock = ["group:sre"]
"""


def write(tmp_path: Path, text: str, name: str = "deploybot.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems_of(tmp_path: Path, text: str) -> list[str]:
    path = write(tmp_path, text)
    with pytest.raises(FileError) as e:
        load(path)
    prefix = f"{path}: "
    assert all(line.startswith(prefix) for line in e.value.problems)
    assert str(e.value) == "\n".join(e.value.problems)
    return [line.removeprefix(prefix) for line in e.value.problems]


# --- reading --------------------------------------------------------------------------------------


def test_the_example_reads_into_normalized_entries(tmp_path):
    config = load(write(tmp_path, EXAMPLE))
    assert config.source == tmp_path / "deploybot.toml"
    assert config.people["alice"].slack == ("U012AB3CD",)
    assert config.people["alice"].email == ("alice@example.com", "alice@corp.example.com")  # lower-cased
    assert config.people["carol"].email == ("carol@example.com",) and config.people["carol"].slack == ()
    assert config.groups == {"sre": ("alice", "bob")}
    assert config.written() == {
        "production": Written(True, ("group:sre", "carol"), True, ("group:sre",)),
    }
    people = config.directory(KINDS)
    assert people.by("email", "ALICE@corp.example.com") == Identity("alice", EMAIL, "alice@corp.example.com")
    assert people.by("slack", "U045EF6GH") == Identity("bob", SLACK, "U045EF6GH")
    assert people.expand(["group:sre"]) == {"alice", "bob"}
    with pytest.raises(ValueError):
        config.groups = {}  # frozen
    with pytest.raises(ValueError):
        config.people["alice"].slack = ()


def test_an_empty_file_is_fine(tmp_path):
    config = load(write(tmp_path, ""))
    assert config.people == {} and config.environments == {} and config.written() == {}
    assert config.directory().people == {}


def test_a_missing_file_is_said_plainly(tmp_path):
    with pytest.raises(FileError) as e:
        load(tmp_path / "nope.toml")
    assert e.value.problems == [f"{tmp_path / 'nope.toml'}: no such file"]


def test_a_toml_syntax_error_names_its_line(tmp_path):
    problems = problems_of(tmp_path, '[people.alice]\nslack = "U1"\nemail = [alice@example.com]\n')
    assert len(problems) == 1 and problems[0].startswith("not valid TOML: ")
    assert "line 3" in problems[0]


def test_a_file_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "deploybot.toml"
    path.write_bytes(b'[people.alice]\nslack = "\xff"\n')
    with pytest.raises(FileError, match="not valid TOML"):
        load(path)


# --- validation: each problem named by its key path ------------------------------------------------


def test_a_typo_in_a_top_level_table_is_an_error(tmp_path):
    assert problems_of(tmp_path, '[peple.alice]\nslack = "U1"\n') == ["peple: unknown key (did you mean people?)"]
    assert problems_of(tmp_path, 'colour = "blue"\n') == [
        "colour: unknown key; expected one of: people, groups, environments, services, triggers, schedules, "
        "freezes, agents, github_environments, promotion, soak"
    ]


def test_unknown_keys_inside_entries(tmp_path):
    # A person's keys are kinds of ids, which the registered channels bring: checked once the
    # root hands them in (refused at start), with the same words.
    config = load(write(tmp_path, '[people.alice]\nslak = "U1"\n\n[people.bob]\npager = "p-1"\n'))
    with pytest.raises(ValueError) as e:
        config.directory(KINDS)
    assert str(e.value).splitlines() == [
        "people.alice.slak: unknown key (did you mean slack?)",
        "people.bob.pager: unknown key; expected one of: slack, email, github",
    ]
    paged = load(write(tmp_path, '[people.bob]\npager = "p-1"\n'))
    assert paged.directory({**KINDS, "pager": str.upper}).by("pager", "p-1").person == "bob"  # one more channel's
    assert problems_of(tmp_path, '[people.alice]\nchat = 7\n') == [
        "people.alice: chat should be a string or a list of strings"
    ]
    assert problems_of(tmp_path, "[environments.production]\nprotect = true\n") == [
        "environments.production.protect: unknown key (did you mean protected?)"
    ]


def test_bad_values_name_their_key(tmp_path):
    problems = problems_of(tmp_path, """
[people.alice]
slack = 5
email = ["alice@example.com", "alice"]

[people.bob]
slack = ["U1", "bob@example.com"]

[environments.production]
protected = "yes"
approvers = "group:sre"
""")
    assert problems == [
        "people.alice.slack: should be a string or a list of strings",
        "people.alice.email: 'alice' is not an email address (like alice@example.com)",
        "people.bob.slack: 'bob@example.com' is not a Slack user id (like U012AB3CD)",
        "environments.production.protected: should be true or false",
        "environments.production.approvers: should be a list of strings",
    ]


def test_tables_that_should_be_tables(tmp_path):
    assert problems_of(tmp_path, 'people = "alice"\n') == ["people: should be a table"]
    assert problems_of(tmp_path, '[people]\nalice = "U1"\n') == ["people.alice: should be a table"]
    assert problems_of(tmp_path, '[groups]\nsre = "alice"\n') == ["groups.sre: should be a list of strings"]


def test_references_must_name_known_people_and_groups(tmp_path):
    problems = problems_of(tmp_path, EXAMPLE.replace(
        'approvers = ["group:sre", "carol"]', 'approvers = ["group:sre", "carl", "group:ops", "U045EF6GH"]'
    ).replace('may_lock = ["group:sre"]', 'may_lock = ["group:*", "bob@example.com"]'))
    assert problems == [
        "environments.production.approvers[1]: there is no person 'carl' under [people] (did you mean carol?)",
        "environments.production.approvers[2]: there is no group 'ops' under [groups]",
        "environments.production.approvers[3]: 'U045EF6GH' is not a person: name people here, not Slack ids "
        "or addresses (give them a [people.NAME] entry and write NAME)",
        "environments.production.may_lock[0]: 'group:*': only '*' written on its own means anyone",
        "environments.production.may_lock[1]: 'bob@example.com' is not a person: name people here, not Slack "
        "ids or addresses (give them a [people.NAME] entry and write NAME)",
    ]


def test_anyone_only_when_written_on_its_own(tmp_path):
    config = load(write(tmp_path, EXAMPLE.replace('may_lock = ["group:sre"]', 'may_lock = ["*"]')))
    assert config.environments["production"].may_lock == ("*",)
    assert problems_of(tmp_path, EXAMPLE.replace('"carol"]', '"car*"]')) == [
        "environments.production.approvers[1]: 'car*': only '*' written on its own means anyone"
    ]


def test_groups_hold_known_people_only(tmp_path):
    problems = problems_of(tmp_path, EXAMPLE.replace(
        'sre = ["alice", "bob"]', 'sre = ["alice", "bobby", "*"]\nall = ["group:sre", "carol"]'
    ))
    assert problems == [
        "groups.sre[1]: there is no person 'bobby' under [people] (did you mean bob?)",
        "groups.sre[2]: a group cannot hold '*': write '*' in approvers or may_lock instead",
        "groups.all[0]: groups hold people, not groups: list the people of group:sre instead",
    ]


def test_no_slack_id_or_address_belongs_to_two_people(tmp_path):
    problems = problems_of(tmp_path, EXAMPLE + """
[people.dave]
slack = ["U999", "U012AB3CD"]
email = "BOB@example.com"
""")
    assert problems == [
        "people.dave.slack: U012AB3CD is also alice's Slack id",
        "people.dave.email: bob@example.com is also bob's address",
    ]


def test_names_must_be_plain(tmp_path):
    problems = problems_of(tmp_path, '[people."al ice"]\nslack = "U1"\n[environments."prod:eu"]\n')
    assert problems == [
        "people.\"al ice\": a name may hold only letters, digits, '.', '_' and '-', and starts with a letter "
        "or a digit",
        "environments.\"prod:eu\": a name may hold only letters, digits, '.', '_' and '-', and starts with a "
        "letter or a digit",
    ]


# --- finding the file -----------------------------------------------------------------------------


def test_no_file_is_fine(tmp_path):
    assert locate({}, tmp_path) is None and read({}, tmp_path) is None


def test_the_working_directory_s_file_is_found(tmp_path):
    path = write(tmp_path, EXAMPLE)
    assert locate({}, tmp_path) == path
    assert read({}, tmp_path).people["bob"].email == ("bob@example.com",)


def test_deploybot_config_names_the_file(tmp_path):
    write(tmp_path, "")  # not this one
    path = write(tmp_path, EXAMPLE, "people.toml")
    assert locate({"DEPLOYBOT_CONFIG": "people.toml"}, tmp_path) == path  # relative to the directory
    assert locate({"deploybot_config": str(path)}, tmp_path / "elsewhere") == path
    assert read({"DEPLOYBOT_CONFIG": str(path)}, tmp_path).source == path


def test_deploybot_config_naming_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(FileError) as e:
        locate({"DEPLOYBOT_CONFIG": "missing.toml"}, tmp_path)
    assert e.value.problems == [f"DEPLOYBOT_CONFIG names {tmp_path / 'missing.toml'}, which is not a file"]
    with pytest.raises(FileError, match="not a file"):
        locate({"DEPLOYBOT_CONFIG": str(tmp_path)}, tmp_path)  # a directory


# --- the file and the variables ---------------------------------------------------------------------


@pytest.fixture
def example(tmp_path) -> FileConfig:
    return load(write(tmp_path, EXAMPLE))


def test_no_conflicts_without_the_variables(example):
    assert conflicts(example, {}) == []
    assert conflicts(example, {"APPROVERS": "", "SLACK_BOT_TOKEN": "x"}) == []  # blank is unset
    assert conflicts(FileConfig(), {"APPROVERS": "U1", "ENVIRONMENTS": "a,b"}) == []


def test_every_overlap_is_named(example):
    variables = {
        "APPROVERS": "U1", "approver_emails": "production:ops@example.com", "PROTECTED_ENVIRONMENTS": "production",
        "APPROVER_MUST_DIFFER": "false", "ENVIRONMENTS": "staging,production",
    }
    assert conflicts(example, variables) == [
        "production's approvers are set in deploybot.toml and by APPROVERS; set them in one place",
        "production's approvers are set in deploybot.toml and by APPROVER_EMAILS; set them in one place",
        "whether production is protected is set in deploybot.toml and by PROTECTED_ENVIRONMENTS; set it in one place",
        "production's approver_must_differ is set in deploybot.toml and by APPROVER_MUST_DIFFER; "
        "set it in one place",
        "the environments' names are set in deploybot.toml ([environments.*]) and by ENVIRONMENTS; "
        "set them in one place",
    ]


def test_approvers_split_between_the_file_and_a_variable_are_a_conflict_too(example):
    assert conflicts(example, {"APPROVERS": "staging:U1"}) == [
        "approvers are set in deploybot.toml (for production) and by APPROVERS (for staging); set them in one place"
    ]


def test_a_people_only_file_leaves_approvers_to_the_variables(tmp_path):
    config = load(write(tmp_path, EXAMPLE.split("[environments.production]")[0], "team.toml"))
    assert conflicts(config, {"APPROVERS": "U012AB3CD", "ENVIRONMENTS": "a", "PROTECTED_ENVIRONMENTS": "a"}) == []
    partial = load(write(tmp_path, "[environments.production]\nprotected = true\n", "team.toml"))
    assert conflicts(partial, {"APPROVERS": "U1", "APPROVER_MUST_DIFFER": "1"}) == []
    assert conflicts(partial, {"PROTECTED_ENVIRONMENTS": "production"}) == [
        "whether production is protected is set in team.toml and by PROTECTED_ENVIRONMENTS; set it in one place"
    ]


def test_an_agent_names_a_person_as_its_owner_and_is_not_one(tmp_path):
    base = '[people.alice]\nslack = "U1"\n'
    assert problems_of(tmp_path, base + '[agents.bot-one]\nowner = "alise"\n') == [
        "agents.bot-one.owner: there is no person 'alise' under [people] (did you mean alice?)"
    ]
    assert problems_of(tmp_path, base + '[agents.alice]\n') == [
        "agents.alice: alice is a person too; name the agent otherwise"
    ]
    assert problems_of(tmp_path, base + '[agents.bot-one]\nmax_open = 0\n')[0].startswith("agents.bot-one.max_open")
