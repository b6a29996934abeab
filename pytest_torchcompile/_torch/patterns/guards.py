"""How torch prints guards: Dynamo's guard tree, its leaf guards' code and comments."""

import re

# --- the tree ----------------------------------------------------------------------

#: `| | +- ...`: the indentation and branch of one tree line, and the rest
TREE_LINE = re.compile(r"^((?:\| )*)\+- (.*)$")
#: the start of a tree line, up to its content
TREE_LINE_START = re.compile(r"^[| ]*\+- ")
#: the start of a tree line, up to its content or a `KeyManager: ` on it
TREE_PREFIX_OR_KEY = re.compile(r"^[| ]*\+- (?:KeyManager: )?")
#: a structure line (a manager, not a check): `GuardManager: source=L['x'], ...`, `KeyManager: ...`
MANAGER_LINE = re.compile(
    r"^(?:TREE_GUARD_MANAGER|\w*GuardManager|KeyManager|ValueManager|KeyValueManager)\b"
)
#: a guard manager with its source: `GuardManager: source=L['self'].lin, accessed_by=...`
MANAGER_SOURCE = re.compile(r"^(?:\w*GuardManager)(?:: source=(.*?), accessed_by=.*)?$")
#: the manager of a frame's globals, whose children guard one global each
GLOBALS_MANAGER = re.compile(
    r"^((?:\| )*)\+- GuardManager: source=G, accessed_by=GlobalsGuardAccessor\b"
)
#: `TENSOR_MATCH: check_tensor(...)`: a leaf guard's kind and code
LEAF_LINE = re.compile(r"^([A-Z][A-Z0-9_]*)(?::\s*(.*))?$")
#: a kind alone on its line
BARE_KIND = re.compile(r"^[A-Z][A-Z_]+$")
#: the guard that a tensor carries no `_dynamo_*` dynamic-dimension marks
DIMENSION_KIND = "DIMENSION_DYNAMIC_MARKING_GUARD"
#: `DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_dynamic_indices') == False`
DIMENSION_MARK = re.compile(
    r"^DIMENSION_DYNAMIC_MARKING_GUARD: hasattr\((.+), '(_dynamo_\w+)'\) == False$"
)
#: the compact form's one line for a tensor's five `hasattr(X, '_dynamo_...') == False` guards
NO_ATTRS = re.compile(r"^(.+) has no (_dynamo_\w+(?:, _dynamo_\w+)*)$")
#: `Guard latency = 70.56 us`: a timing printed below the tree, on a line of its own
GUARD_LATENCY = "Guard latency = "

# --- a leaf guard's code -----------------------------------------------------------

#: `___check_obj_id(G['torch'], 1400...)`: the object id an ID_MATCH guard compares with
OBJ_ID_VALUE = re.compile(r"(___check_(?:obj|type)_id\([^\n]*?, )(?:\d+|<id>)(\))")
#: `___check_obj_id(...), type=<class ...>`: the type note some torch versions append
TYPE_NOTE = re.compile(r"^(___check_(?:obj|type)_id\(.*?\)), type=.*$")
#: `"num_threads":2` in GLOBAL_STATE's recorded state
NUM_THREADS = re.compile(r'("num_threads":)\d+')
#: `L['x']`, `G['torch'].nn`: where Dynamo's sources start (a frame's locals, its globals)
SOURCE_START = re.compile(r"(?<![\w.])[LG]\[")
#: `list(dict.keys(G[...]))[13] == "<class ...>"`: a key of a global dict, guarded by position
GLOBAL_DICT_KEY = re.compile(
    r"list\(dict\.keys\((G\[[^()\n]*?)\)\)\[(\d+)\] == (\"[^\"\n]*\"|'[^'\n]*')"
)
#: `list(dict.keys(G[...]))[13]`: a key of a dict reached from a global, read by its position
GLOBAL_DICT_POSITION = re.compile(r"list\(dict\.keys\((G\[[^()\n]*?)\)\)\[(\d+)\]")
#: `___check_obj_id(list(dict.keys(G[...]))[13], <id>), type=<class 'X'>`: that key by identity; the
#: note names the object itself where it is a class (a registry of classes), else its type
GLOBAL_DICT_KEY_ID = re.compile(
    r"___check_obj_id\(list\(dict\.keys\((G\[[^()\n]*?)\)\)\[(\d+)\], (?:\d+|<id>)\)"
    r", type=(<class '[^'\n]*'>)"
)
#: `G['m'].Tensor is list(dict.keys(G[...]))[13]` (either way round): that key is the object another
#: source reads (Dynamo's guard that two sources hold one object, one of them a key by position)
GLOBAL_DICT_KEY_ALIAS = re.compile(
    r"(?<![\w.\]])([LG]\[[^\s#()]*?) is list\(dict\.keys\((G\[[^()\n]*?)\)\)\[(\d+)\](?![\w.\[])"
    r"|(?<![\w.\]])list\(dict\.keys\((G\[[^()\n]*?)\)\)\[(\d+)\] is ([LG]\[[^\s#,)]*)"
)
#: `| | +- KeyValueManager pair at index=13`: a dict's key and value guards, by the key's position
KEY_VALUE_PAIR = re.compile(r"(\+- KeyValueManager pair at index=)\d+")
#: `| +- DictGuardManager: source=G['m'].REGISTRY, ...`: the guards on a dict reached from a global
GLOBAL_DICT_MANAGER = re.compile(r"^((?:\| )*)\+- DictGuardManager: source=G\[")

#: a guard of the tree's root (or of the stored form) relating values by code, `+- LAMBDA_GUARD: G['a'].torch is
#: G['___unnamed_scope_...']['torch']`: Dynamo's epilogue guards
ROOT_LAMBDA_GUARD = re.compile(r"^(?:\+- )?LAMBDA_GUARD: ")
#: a guard that compares with a constant's repr: `EQUALS_MATCH: G['m'].MODES == {'same', 'valid'}`
#: (in the tree, the stored form, and the program file's `lambda: ...,  # EQUALS_MATCH`)
EQUALS_MATCH_LINE = re.compile(r"\bEQUALS_MATCH\b")

# --- a leaf guard's comment --------------------------------------------------------

#: a path in a guard's comment, shortened relative to torch's install dir: `ome/u/m.py:12`
COMMENT_PATH = re.compile(r"(#[ \t])[^\s#]*/([^/\s]+\.py:)")
#: `  # import sys;exec(...)  # <string>:1 in <lambda>`: the user line a guard's comment quotes
#: (`format_frame(line=True)`) for code of a pseudo-file. `<string>` names every eval'd and
#: exec'd text, and Python 3.13 registers a `-c` program's source under it (xdist's workers
#: start so): the quoted line is another text's, when there is one at all
PSEUDO_FILE_QUOTE = re.compile(r"(  # )(?:(?!  # ).)+(  # <(?:string|stdin)>:\d+ in )")
#: ` and (_inductor/codegen/cpp.py:12 in need_use_acc_helper)`: which torch function
#: installed a shape guard, at the end of its comment
PROVENANCE_TAIL = re.compile(r" and \([^\s()]+\.py:(?:\d+|<N>) in \w+\)[ \t]*$", re.MULTILINE)
#: `  # (_inductor/codegen/simd.py:1877 in can_use_32bit_indexing)`: the same, as the
#: whole comment of a shape guard with no user code
BARE_PROVENANCE = re.compile(
    r"(?:[ \t]+# \([^\s()]+\.py:(?:\d+|<N>) in \w+\))+[ \t]*$", re.MULTILINE
)


def code_and_comment(line: str) -> tuple[str, str]:
    """(a guard line's code, its comment from the `#`), split at the first `#` after blank space
    that no string literal of the code holds: `L['cfg'].mode == 'fast # v1'  # model.py:3`."""
    if "#" not in line:
        return line, ""
    quote = ""
    escaped = False
    for index, char in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index].rstrip(), line[index:]
    return line, ""
