"""The PTX grammar (lark, LALR(1), contextual lexer), kept in Python so that it ships with
the package without package-data settings."""

GRAMMAR = r"""
// PTX module grammar (PTX ISA chapters 4 "Syntax", 5 "State Spaces, Types, and Variables",
// 11 "Directives"). LALR(1) with lark's contextual lexer. The instruction mnemonic and its
// qualifiers are one token (OPCODE), split in Python: qualifier order is not the grammar's job.

start: _mitem*

_mitem: version | target | address_size | file | section | var_decl | function | pragma | loc

version: ".version" (FLOAT | INT)
target: ".target" NAME ("," NAME)*
address_size: ".address_size" INT
file: ".file" INT STRING ("," INT)*
section: ".section" DIRECTIVE SECTION_BODY
pragma: ".pragma" STRING ("," STRING)* ";"
loc: ".loc" INT INT INT ("," loc_attr)*
loc_attr: NAME (NAME | INT)+

linkage: LINKAGE
LINKAGE.3: /\.(visible|extern|weak|common)\b/

// 5.4 variables: .global/.shared/.const/.local/.param declarations (+ .align, vector, type)
var_decl: linkage* SPACE attr* declarator ("," declarator)* ["=" init] ";"
SPACE.3: /\.(global|shared|const|local|param|tex)\b/
attr: ".align" INT -> align
    | ".attribute" "(" DIRECTIVE ("," DIRECTIVE)* ")" -> var_attribute
    | DIRECTIVE    -> attr
declarator: NAME dims?
dims: ("[" [INT] "]")+
init: init_atom | "{" init ("," init)* "}"
init_atom: INT | SIGNED | FLOAT | HEXFLOAT | NAME | NAME "+" INT -> init_sym_offset | NAME "(" NAME ")" -> init_generic

// 11.1 functions: .entry / .func with parameters and performance-tuning directives
function: linkage* FUNC_KIND ret_params? NAME params? func_attr* (body | ";")
FUNC_KIND.3: /\.(entry|func)\b/
ret_params: "(" [param ("," param)*] ")"
params: "(" [param ("," param)*] ")"
param: PARAM_SPACE attr* NAME dims?
PARAM_SPACE.3: /\.(param|reg)\b/
func_attr: DIRECTIVE (INT ("," INT)*)?  -> perf
         | pragma

body: "{" _stmt* "}"
_stmt: label_def | instruction | reg_decl | var_decl | loc | pragma | body | file | targets | callprototype

// 11.3 control-flow directives
targets: TARGETS_KIND NAME ("," NAME)* ";"
TARGETS_KIND.3: /\.(branchtargets|calltargets)\b/
callprototype: ".callprototype" ret_params? NAME params ";"

label_def: LABEL_DEF
LABEL_DEF.2: /[A-Za-z_$%][\w$]*[ \t]*:(?!:)/

reg_decl: ".reg" attr+ reg_item ("," reg_item)* ";"
reg_item: NAME ["<" INT ">"]

instruction: guard? OPCODE [operand ("," operand)*] ";"
guard: "@" NEG? NAME
NEG: "!"

?operand: NAME                       -> reg
        | NEG NAME                   -> negreg
        | "-" NAME                   -> minusreg
        | NAME "|" NAME              -> regpair
        | NAME ("+" (INT | SIGNED) | SIGNED) -> symoffset
        | imm
        | "[" addr ["," vector] "]"  -> address
        | vector
        | "(" [operand ("," operand)*] ")" -> group
vector: "{" [operand ("," operand)*] "}"
addr: NAME                           -> addr_base
    | NAME "+" (INT | SIGNED)        -> addr_plus
    | NAME SIGNED                    -> addr_plus
    | INT                            -> addr_abs
?imm: INT -> int_imm
    | SIGNED -> int_imm
    | HEXFLOAT -> hexfloat_imm
    | FLOAT -> float_imm

OPCODE: /[a-z][a-z0-9_]*(\.[A-Za-z0-9_]+(::[A-Za-z0-9_]+)*|::[A-Za-z0-9_]+)*/
NAME: /[A-Za-z_$%][\w$]*(\.[A-Za-z0-9_]+)?/
DIRECTIVE: /\.[A-Za-z_][\w]*(::[\w]+)*/
HEXFLOAT.4: /0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}/
FLOAT.3: /-?(\d+\.\d*|\.\d+)([eE][-+]?\d+)?|-?\d+[eE][-+]?\d+/
INT.2: /(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uU]?/
SIGNED.2: /-(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uU]?/
STRING: /"(\\.|[^"\\])*"/
SECTION_BODY: /\{[^}]*\}/

COMMENT: /\/\/[^\n]*/
BLOCK_COMMENT: /\/\*(.|\n)*?\*\//
%import common.WS
%ignore WS
%ignore COMMENT
%ignore BLOCK_COMMENT
"""
