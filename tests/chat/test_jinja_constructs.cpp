// Unit tests of the Jinja-subset interpreter, one construct at a time, in the environment
// transformers renders chat templates with (trim_blocks, lstrip_blocks, loopcontrols,
// raise_exception, strftime_now, tojson without HTML escaping and with ensure_ascii=False).
// Expected outputs follow Jinja 3.1 semantics (checked against jinja2 3.1.6 when written).
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "tessera/error.h"

namespace tessera {
namespace {

using ojson = nlohmann::ordered_json;

// kError: a run-time error (Error(invalid_argument)); kSyntax: rejected when parsed
// (Error(invalid_model)), as Jinja rejects it when compiling.
enum Expect { kOk, kRaise, kError, kSyntax };

struct Case {
  const char* name;
  const char* tmpl;
  const char* context;  // JSON object, "" for none
  Expect expect;
  const char* result;  // output (kOk) or the raise_exception message (kRaise)
};

const Case
    kCases[] =
        {
            {"Access1",
             R"J({{ messages[0].role }}|{{ messages[1]['content'] }}|{{ messages[-1].content }})J",
             R"J({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})J",
             kOk, R"J(system|hi|yo)J"},
            {"Access2",
             R"J({{ d.a.b }}|{{ d['a']['b'] }}|{{ d.missing }}|{{ d.a.missing is defined }})J",
             R"J({"d": {"a": {"b": 7}}})J", kOk, R"J(7|7||False)J"},
            {"Access3_UndefinedError", R"J({{ x.y }})J", R"J()J", kError, R"J()J"},
            {"Access4_UndefinedError", R"J({{ d.missing.deeper }})J", R"J({"d": {}})J", kError,
             R"J()J"},
            {"Access5", R"J({{ l.1 }}{{ l[5] }}|{{ (l[5] is defined) }})J", R"J({"l": [1, 2]})J",
             kOk, R"J(2|False)J"},
            {"Access6", R"J({{ d.items()|list }})J", R"J({"d": {"items": 3}})J", kOk,
             R"J([('items', 3)])J"},
            {"Access7",
             R"J({{ d['items'] }}|{{ d.get('x', 'dflt') }}|{{ d.get('items') }}|{{ d.get('nope') }})J",
             R"J({"d": {"items": 3}})J", kOk, R"J(3|dflt|3|None)J"},
            {"Access8",
             R"J({{ missing }}|{{ missing|default('fallback') }}|{{ none_val|default('x') }}|{{ none_val|d('x', true) }})J",
             R"J({"none_val": null})J", kOk, R"J(|fallback|None|x)J"},
            {"Print1",
             R"J({{ 1 }} {{ 1.0 }} {{ 1.5e3 }} {{ 1e16 }} {{ 0.1 + 0.2 }} {{ 2.5e-5 }} {{ -0.0 }} {{ 10/4 }} {{ 10//4 }} {{ -7//2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2**10 }} {{ 2**-1 }} {{ 7.5 // 2 }})J",
             R"J()J", kOk,
             R"J(1 1.0 1500.0 1e+16 0.30000000000000004 2.5e-05 -0.0 2.5 2 -4 2 -2 1024 0.5 3.0)J"},
            {"Print2",
             R"J({{ true }} {{ false }} {{ none }} {{ True }} {{ None }} {{ [1, 'a', none, true, 1.5] }} {{ {'k': 'v', 'n': [1]} }} {{ (1, 'b') }} {{ ('x',) }} {{ () }})J",
             R"J()J", kOk,
             R"J(True False None True None [1, 'a', None, True, 1.5] {'k': 'v', 'n': [1]} (1, 'b') ('x',) ())J"},
            {"Print3", R"J({{ "it's" }} {{ ['it\'s', 'say "hi"', 'both \' "', 'tab\tnl\n'] }})J",
             R"J()J", kOk, R"J(it's ["it's", 'say "hi"', 'both \' "', 'tab\tnl\n'])J"},
            {"Print4", R"J({{ 'a' 'b' }}|{{ '\u00e9\x41\n' }}|{{ 'lit\\d' }}|{{ "dq\"" }})J",
             R"J()J", kOk, R"J(ab|éA
|lit\d|dq")J"},
            {"Print5", R"J({{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }})J", R"J()J", kOk,
             R"J(31 15 5 1000)J"},
            {"Print6", R"J({{ ['é', '😀', '\x7f'] }})J", R"J()J", kOk, R"J(['é', '😀', '\x7f'])J"},
            {"Ops1",
             R"J({{ 'a' ~ 1 ~ none ~ missing ~ [1] }}|{{ 'a' + 'b' }}|{{ [1] + [2] }}|{{ 'ab' * 3 }}|{{ 3 * [0] }})J",
             R"J()J", kOk, R"J(a1None[1]|ab|[1, 2]|ababab|[0, 0, 0])J"},
            {"Ops2_TypeError", R"J({{ 'a' + 1 }})J", R"J()J", kError, R"J()J"},
            {"Ops3_TypeError", R"J({{ 1 + 'a' }})J", R"J()J", kError, R"J()J"},
            {"Ops4_UndefinedError", R"J({{ missing + 1 }})J", R"J()J", kError, R"J()J"},
            {"Ops5_ZeroDivisionError", R"J({{ 1 / 0 }})J", R"J()J", kError, R"J()J"},
            {"Ops6",
             R"J({{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' == 'a' }} {{ [1, 2] == [1, 2] }} {{ {'a': 1} == {'a': 1} }} {{ none == none }} {{ 'a' != 'b' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'abc' < 'abd' }} {{ [1, 2] < [1, 3] }})J",
             R"J()J", kOk, R"J(True True True True True True True True False True True)J"},
            {"Ops7_TypeError", R"J({{ 1 < 'a' }})J", R"J()J", kError, R"J()J"},
            {"Ops8",
             R"J({{ 'b' in 'abc' }} {{ 'x' not in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'v' in {'k': 'v'} }} {{ 'x' in missing }} {{ not 'x' in 'xy' }})J",
             R"J()J", kOk, R"J(True True True True False False False)J"},
            {"Ops9_TypeError", R"J({{ 1 in 'abc' }})J", R"J()J", kError, R"J()J"},
            {"Ops10_TypeError", R"J({{ 'a' in none }})J", R"J()J", kError, R"J()J"},
            {"Ops11",
             R"J({{ 0 or 'x' }} {{ 'y' or 'x' }} {{ 0 and 'x' }} {{ 2 and 'x' }} {{ not 0 }} {{ not [] }} {{ not {} }} {{ not '' }} {{ not missing }} {{ none or [] or 'last' }})J",
             R"J()J", kOk, R"J(x y 0 x True True True True True last)J"},
            {"Ops12",
             R"J({{ 'yes' if 1 else 'no' }}|{{ 'yes' if 0 else 'no' }}|{{ 'only' if 0 }}|{{ 'a' if 0 else 'b' if 0 else 'c' }}|{{ -3|abs }} {{ -(2 + 3) }} {{ +4 }})J",
             R"J()J", kOk, R"J(yes|no||c|3 -5 4)J"},
            {"Ops13",
             R"J({{ 1 + 2 * 3 - 4 / 2 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ 'a' ~ (1 + 2) }} {{ 10 - 2 - 3 }} {{ -2 ** 2 }} {{ 1 ~ 2 * 3 }})J",
             R"J()J", kOk, R"J(5.0 9 64 a3 5 4 16)J"},
            {"Ops14_TypeError", R"J({{ 'a' ~ 1 + 2 }})J", R"J()J", kError, R"J()J"},
            {"Slice1",
             R"J({{ messages[1:]|length }} {{ messages[:1][0].role }} {{ messages[::-1][0].role }} {{ messages[-2:][0].role }} {{ messages[5:]|length }})J",
             R"J({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})J",
             kOk, R"J(2 system assistant user 0)J"},
            {"Slice2",
             R"J({{ 'héllo'[1:3] }}|{{ 'abcdef'[::2] }}|{{ 'abc'[::-1] }}|{{ 'abc'[-1] }}|{{ 'abc'[10:] }}|{{ 'abcdef'[-2:0:-1] }}|{{ [1,2,3][1:99] }})J",
             R"J()J", kOk, R"J(él|ace|cba|c||edcb|[2, 3])J"},
            {"Slice3_ValueError", R"J({{ [1,2][::0] }})J", R"J()J", kError, R"J()J"},
            {"If1",
             R"J({% if x == 1 %}one{% elif x == 2 %}two{% elif x == 3 %}three{% else %}other{% endif %})J",
             R"J({"x": 2})J", kOk, R"J(two)J"},
            {"If2", R"J({% if x == 1 %}one{% elif x == 2 %}two{% else %}other{% endif %})J",
             R"J({"x": 9})J", kOk, R"J(other)J"},
            {"If3",
             R"J({% if missing %}a{% else %}b{% endif %}{% if [] %}c{% endif %}{% if [0] %}d{% endif %})J",
             R"J()J", kOk, R"J(bd)J"},
            {"For1",
             R"J({% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}:{{ m.role }};{% endfor %})J",
             R"J({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})J",
             kOk, R"J(1032TrueFalse3:system;2121FalseFalse3:user;3210FalseTrue3:assistant;)J"},
            {"For2",
             R"J({% for x in [] %}x{% else %}empty{% endfor %}|{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.index }}/{{ loop.length }} {% else %}none{% endfor %}|{% for x in [1] if x > 5 %}{% else %}filtered-out{% endfor %})J",
             R"J()J", kOk, R"J(empty|21/2 42/2 |filtered-out)J"},
            {"For3",
             R"J({% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}|{% for k in {'z': 1, 'a': 2} %}{{ k }}{% endfor %}|{% for ch in 'hé' %}[{{ ch }}]{% endfor %}|{% for x in missing %}x{% endfor %})J",
             R"J()J", kOk, R"J(a=1,b=2,|za|[h][é]|)J"},
            {"For4",
             R"J({% for x in [1, 2, 3, 4, 5] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %})J",
             R"J()J", kOk, R"J(13)J"},
            {"For5",
             R"J({% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %})J",
             R"J()J", kOk, R"J(11x 21y 1|12x 22y 2|)J"},
            {"For6",
             R"J({% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('odd', 'even') }} {% endfor %})J",
             R"J()J", kOk, R"J(-2-odd 1-3-even 2--odd )J"},
            {"For7_TypeError", R"J({% for x in none %}{% endfor %})J", R"J()J", kError, R"J()J"},
            {"For8",
             R"J({% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}{% for (a, b) in [(5, 6)] %}{{ a * b }}{% endfor %})J",
             R"J()J", kOk, R"J(3 7 30)J"},
            {"For9_ValueError", R"J({% for a, b in [[1, 2, 3]] %}{% endfor %})J", R"J()J", kError,
             R"J()J"},
            {"Set1",
             R"J({% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}|{% set y = 1 %}{% if true %}{% set y = 2 %}{% endif %}{{ y }})J",
             R"J()J", kOk, R"J(21|2)J"},
            {"Set2",
             R"J({% for i in [1, 2] %}{% if i == 1 %}{% set x = 'a' %}{% endif %}[{{ x }}]{% endfor %})J",
             R"J()J", kOk, R"J([a][])J"},
            {"Set3",
             R"J({% set ns = namespace(found=false, n=0) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.found = true %}{% endif %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.found }} {{ ns.n }} {{ ns.missing is defined }})J",
             R"J({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})J",
             kOk, R"J(True 3 False)J"},
            {"Set4", R"J({% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 'x' %}{{ t }})J", R"J()J",
             kOk, R"J(12(1, 'x'))J"},
            {"Set5",
             R"J({% set block %}  inner {{ 1 + 1 }} {% endset %}[{{ block }}]{% set up | upper | trim %} shout {% endset %}[{{ up }}])J",
             R"J()J", kOk, R"J([  inner 2 ][SHOUT])J"},
            {"Set6_TemplateRuntimeError", R"J({% set x = 5 %}{% set x.attr = 1 %})J", R"J()J",
             kError, R"J()J"},
            {"Set7",
             R"J({% set messages = messages[1:] %}{{ messages|length }}{% set tools = tools or [] %}{{ tools|length }})J",
             R"J({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})J",
             kOk, R"J(20)J"},
            {"Macro1",
             R"J({% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }} {{ greet() }}|)J",
             R"J()J", kOk, R"J(Hello A! Hello B? Hello C. Hello !|)J"},
            {"Macro2",
             R"J({% set g = 'global' %}{% macro show() %}{{ g }}{% endmacro %}{% for g in ['loop'] %}{{ show() }}{% endfor %})J",
             R"J()J", kOk, R"J(global)J"},
            {"Macro3",
             R"J({% macro render(x) %}{% if x is mapping %}{% for k, v in x.items() %}{{ k }}:{{ render(v) }};{% endfor %}{% else %}{{ x }}{% endif %}{% endmacro %}{{ render({'a': {'b': 1}, 'c': 2}) }})J",
             R"J()J", kOk, R"J(a:b:1;;c:2;)J"},
            {"Macro4",
             R"J({% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}body{% endcall %})J",
             R"J()J", kOk, R"J(<body>)J"},
            {"Macro5",
             R"J({% macro f() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, k=3) }})J",
             R"J()J", kOk, R"J((1, 2){'k': 3})J"},
            {"Raise1", R"J({{ raise_exception('Conversation roles must alternate') }})J", R"J()J",
             kRaise, R"J(Conversation roles must alternate)J"},
            {"Raise2", R"J(before{% if true %}{{ raise_exception('bad ' ~ 1) }}{% endif %})J",
             R"J()J", kRaise, R"J(bad 1)J"},
            {"Filter1",
             R"J([{{ '  a b  '|trim }}] [{{ 'xxaxx'|trim('x') }}] {{ 'abc'|length }} {{ [1, 2]|length }} {{ {'a': 1}|length }} {{ 'héllo'|length }} {{ missing|length }} {{ [1,2]|count }})J",
             R"J()J", kOk, R"J([a b] [a] 3 2 1 5 0 2)J"},
            {"Filter2",
             R"J({{ 'Hello World'|lower }} {{ 'hello wörld'|upper }} {{ 'hello WORLD'|capitalize }} {{ 'hello big-world (x) [y]'|title }} {{ "it's a test"|title }})J",
             R"J()J", kOk,
             R"J(hello world HELLO WÖRLD Hello world Hello Big-World (X) [Y] It's A Test)J"},
            {"Filter3", R"J({{ [3, 1, 2]|first }} {{ [3, 1, 2]|last }} {{ 'abc'|first }} {{ []|first }}|{{ [1, 2, 3]|join(', ') }}|{{ ['a', 'b']|join }}|{{ [{'n': 'x'}, {'n': 'y'}]|join('-', attribute='n') }})J",
             R"J()J", kOk, R"J(3 2 a |1, 2, 3|ab|x-y)J"},
            {"Filter4",
             R"J({{ 'a-b-c'|replace('-', '+') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|list }} {{ {'a': 1}|list }} {{ 42|string ~ '!' }} {{ '42'|int + 1 }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '0x1A'|int(0, 16) }} {{ '3.5'|float }} {{ 'x'|float }})J",
             R"J()J", kOk, R"J(a+b+c bba ['a', 'b', 'c'] ['a'] 42! 43 4 0 7 3 26 3.5 0.0)J"},
            {"Filter5",
             R"J({{ {'b': 1, 'a': 2}|items|list }} {% for k, v in {'b': 1, 'a': 2}|items %}{{ k }}{{ v }}{% endfor %} {{ {'b': 1, 'A': 2, 'a': 0}|dictsort }} {{ missing|items|list }})J",
             R"J()J", kOk, R"J([('b', 1), ('a', 2)] b1a2 [('A', 2), ('a', 0), ('b', 1)] [])J"},
            {"Filter6",
             R"J({{ 'x'|safe }} {{ '<a href="x">&</a>'|e }} {{ [3, 1, 2]|sort }} {{ ['b', 'A', 'a']|sort }} {{ ['b', 'A', 'a']|sort(case_sensitive=true) }} {{ [3, 1, 2]|sort(reverse=true) }} {{ [{'n': 2}, {'n': 1}]|sort(attribute='n') }})J",
             R"J()J", kOk,
             R"J(x &lt;a href=&#34;x&#34;&gt;&amp;&lt;/a&gt; [1, 2, 3] ['A', 'a', 'b'] ['A', 'a', 'b'] [3, 2, 1] [{'n': 1}, {'n': 2}])J"},
            {"Filter7",
             R"J({{ [1, 2, 2, 'a', 'A']|unique|list }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ [1, 2, 3]|sum }} {{ [{'v': 1}, {'v': 2}]|sum(attribute='v') }} {{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }})J",
             R"J()J", kOk, R"J([1, 2, 'a'] 1 3 6 3 [3, 2, 1] cba)J"},
            {"Filter8",
             R"J({{ [{'role': 'user', 'x': 1}, {'role': 'tool'}, {'role': 'user'}]|selectattr('role', 'equalto', 'user')|list|length }} {{ [{'a': 1}, {'a': 0}, {}]|selectattr('a')|list }} {{ [{'a': 1}, {'a': 0}]|rejectattr('a')|list }} {{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('odd')|list }} {{ [0, 1, '', 'x']|select|list }})J",
             R"J()J", kOk, R"J(2 [{'a': 1}] [{'a': 0}] [1, 3] [2, 4] [1, 'x'])J"},
            {"Filter9",
             R"J({{ [{'n': 'a'}, {'n': 'b'}]|map(attribute='n')|list }} {{ ['a', 'b']|map('upper')|join }} {{ [{'n': 'a'}, {}]|map(attribute='n', default='?')|list }} {{ ['x', 'y']|map('replace', 'x', 'z')|list }} {{ [1, 2]|map('string')|list }})J",
             R"J()J", kOk, R"J(['a', 'b'] AB ['a', '?'] ['z', 'y'] ['1', '2'])J"},
            {"Filter10",
             R"J({{ 'line1\nline2\n\nline4'|indent }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent(2, blank=true) }}|{{ 'x'|center(5) }}|{{ [1, 2, 3, 4, 5]|batch(2)|list }}|{{ 'one two  three'|wordcount }}|{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ -2.5|round }})J",
             R"J()J", kOk, R"J(line1
    line2

    line4|  a
  b|a
  
  b|  x  |[[1, 2], [3, 4], [5]]|3|2.0 4.0 2.67 3.0 -2.0)J"},
            {"Filter11",
             R"J({{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ [1, [2, {}], []]|tojson(indent=4) }}|{{ d|tojson(separators=(',', ':')) }}|{{ d|tojson(sort_keys=true) }}|{{ 'ünï "q" \\ \n\t\u0001 😀'|tojson }}|{{ 'é'|tojson(ensure_ascii=true) }}|{{ [1.0, 1.5, 1e20, true, none]|tojson }})J",
             R"J({"d": {"z": 1, "a": [1, 2], "m": {"k": null}}})J", kOk,
             R"J({"z": 1, "a": [1, 2], "m": {"k": null}}|{
  "z": 1,
  "a": [
    1,
    2
  ],
  "m": {
    "k": null
  }
}|[
    1,
    [
        2,
        {}
    ],
    []
]|{"z":1,"a":[1,2],"m":{"k":null}}|{"a": [1, 2], "m": {"k": null}, "z": 1}|"ünï \"q\" \\ \n\t\u0001 😀"|"\u00e9"|[1.0, 1.5, 1e+20, true, null])J"},
            {"Filter12_TypeError", R"J({{ missing|tojson }})J", R"J()J", kError, R"J()J"},
            {"Filter13_TemplateAssertionError", R"J({{ x|nosuchfilter }})J", R"J()J", kSyntax,
             R"J()J"},
            {"Filter14_TypeError", R"J({% set ns = namespace(a=1) %}{{ ns|tojson }})J", R"J()J",
             kError, R"J()J"},
            {"Filter15", R"J({{ 'abc'|attr('upper')() }} {{ {'a': 1}|attr('a') is defined }})J",
             R"J()J", kOk, R"J(ABC False)J"},
            {"Filter16", R"J({% filter upper %}shout {{ 'this' }}{% endfilter %})J", R"J()J", kOk,
             R"J(SHOUT THIS)J"},
            {"Test1",
             R"J({{ 'a' is string }} {{ 1 is string }} {{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ 1 is boolean }})J",
             R"J()J", kOk, R"J(True False True True True True False True True False)J"},
            {"Test2",
             R"J({{ x is defined }} {{ missing is defined }} {{ missing is undefined }} {{ none is none }} {{ 0 is none }} {{ x is not none }} {{ none is not none }} {{ true is true }} {{ 1 is true }} {{ false is false }})J",
             R"J({"x": 1})J", kOk, R"J(True False True True False True False True False True)J"},
            {"Test3",
             R"J({{ {} is mapping }} {{ [] is mapping }} {{ [] is iterable }} {{ 'a' is iterable }} {{ {} is iterable }} {{ 1 is iterable }} {{ none is iterable }} {{ missing is iterable }} {{ [] is sequence }} {{ 'a' is sequence }} {{ 1 is sequence }})J",
             R"J()J", kOk, R"J(True False True True True False False True True True False)J"},
            {"Test4",
             R"J({{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 2 is equalto 2 }} {{ 2 is eq(3) }} {{ 2 is ne 3 }} {{ 1 is lt 2 }} {{ 2 is ge 2 }} {{ 'a' is in 'abc' }} {{ 2 is in [1] }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ range is callable }} {{ 'x' is callable }} {{ none is sameas none }} {{ false is sameas false }})J",
             R"J()J", kOk,
             R"J(True True True False True False True True True True False True True True False True True)J"},
            {"Test5_TemplateAssertionError", R"J({{ 1 is nosuchtest }})J", R"J()J", kSyntax,
             R"J()J"},
            {"Method1",
             R"J({{ 'hello'.startswith('he') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith('l', 2) }} {{ 'a,b,,c'.split(',') }} {{ '  a  b \n c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'x</think>y</think>z'.split('</think>')[-1] }})J",
             R"J()J", kOk,
             R"J(True True True True ['a', 'b', '', 'c'] ['a', 'b', 'c'] ['a', 'b c'] ['a,b', 'c'] z)J"},
            {"Method2",
             R"J([{{ '  pad  '.strip() }}] [{{ '\n\nx\n'.lstrip('\n') }}] [{{ 'x\n\n'.rstrip('\n') }}] [{{ '<<x>>'.strip('<>') }}] {{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'a-b'.replace('-', '') }} {{ 'ab'.replace('', '.') }})J",
             R"J()J", kOk, R"J([pad] [x
] [x] [x] HELLO hello Hello World Hello ab .a.b.)J"},
            {"Method3",
             R"J({{ 'x={} y={}'.format(1, 'two') }} {{ '{0}{0}{name}'.format('a', name='b') }} {{ '{{literal}}'.format() }} {{ 'abcabc'.find('c') }} {{ 'abcabc'.rfind('c') }} {{ 'abc'.find('z') }} {{ 'aXbXc'.count('X') }} {{ ', '.join(['a', 'b']) }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ ' '.isspace() }} {{ 'a\nb\r\nc'.splitlines() }})J",
             R"J()J", kOk,
             R"J(x=1 y=two aab {literal} 2 5 -1 2 a, b True True True ['a', 'b', 'c'])J"},
            {"Method4_UndefinedError", R"J({{ 'abc'.nosuchmethod() }})J", R"J()J", kError, R"J()J"},
            {"Method5",
             R"J({{ {'a': 1, 'b': 2}.keys()|list }} {{ {'a': 1, 'b': 2}.values()|list }} {{ {'a': 1}.items()|list }} {{ [1, 2, 1].count(1) }} {{ [1, 2].index(2) }})J",
             R"J()J", kOk, R"J(['a', 'b'] [1, 2] [('a', 1)] 2 1)J"},
            {"Global1",
             R"J({{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(3, 0, -1)|list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }} {{ tools }} {{ documents }} {{ add_generation_prompt }})J",
             R"J()J", kOk,
             R"J([0, 1, 2] [1, 3, 5] [3, 2, 1] {'a': 1, 'b': 'x'} 1 None None False)J"},
            {"Global2_OverflowError", R"J({{ range(200000)|length }})J", R"J()J", kError, R"J()J"},
            {"Whitespace1", R"J(a  {%- if true -%}  b  {%- endif -%}  c)J", R"J()J", kOk,
             R"J(abc)J"},
            {"Whitespace2", R"J(a  {{- 'b' -}}  c {{ 'd' }} e)J", R"J()J", kOk, R"J(abc d e)J"},
            {"Whitespace3", R"J(<ul>
    {% for x in [1, 2] %}
    <li>{{ x }}</li>
    {% endfor %}
</ul>
)J",
             R"J()J", kOk, R"J(<ul>
    <li>1</li>
    <li>2</li>
</ul>)J"},
            {"Whitespace4", R"J(line1
  {# comment #}
line2 {# inline #} tail
  {#- stripped -#}  
end)J",
             R"J()J", kOk, R"J(line1
line2  tailend)J"},
            {"Whitespace5", R"J(x
    {%+ if true %}kept-indent{% endif %}
y {% if true +%}
no-trim{% endif %})J",
             R"J()J", kOk, R"J(x
    kept-indenty 
no-trim)J"},
            {"Whitespace6",
             R"J({% raw %}{{ not evaluated }} {% if %}{% endraw %}|{%- raw -%}  spaced  {%- endraw -%}|)J",
             R"J()J", kOk, R"J({{ not evaluated }} {% if %}|spaced|)J"},
            {"Whitespace7",
             "a\x0d"
             "\nb\x0d"
             "c\n{% if true %}\x0d"
             "\nd{% endif %}\n\n",
             R"J()J", kOk, R"J(a
b
c
d)J"},
            {"Whitespace8",
             "  {{ 'var tags are not lstripped' }}\n  {% if true %}x{% endif %}  \x09"
             "text",
             R"J()J", kOk,
             "  var tags are not lstripped\nx  \x09"
             "text"},
            {"Whitespace9",
             R"J({% generation %}gen {{ 1 }}{% endgeneration %}|{% with a = 2 %}{{ a }}{% endwith %}{{ a }}|{{ 'a' }}{# multi
line
comment #}{{ 'b' }})J",
             R"J()J", kOk, R"J(gen 1|2|ab)J"},
            {"Whitespace10", R"J(trailing newline kept once

)J",
             R"J()J", kOk, R"J(trailing newline kept once
)J"},
            {"Quirk1",
             R"J({% if true: %}a{% elif false: %}b{% else: %}c{% endif %}{% for x in [1]: %}{{ x }}{% else: %}{% endfor %}{% macro m(): %}M{% endmacro %}{{ m() }})J",
             R"J()J", kOk, R"J(a1M)J"},
            {"Quirk2", R"J({{ d[] }}|{{ [1, 2, 3][1:] }}|{{ 'abc'[:-1] }})J", R"J({"d": {}})J", kOk,
             R"J(|[2, 3]|ab)J"},
            {"Quirk3_TemplateSyntaxError", R"J({{ 08 }})J", R"J()J", kSyntax, R"J()J"},
            {"Quirk4", R"J({{ 0 }}{{ 00 }}{{ 0.5 }}{{ 08.5 }}{{ 1e3 }})J", R"J()J", kOk,
             R"J(000.58.51000.0)J"},
            {"Quirk5", R"J({{ '\é|\\é|é' }})J", R"J()J", kOk, R"J(\xe9|\é|é)J"},
            {"Quirk6", R"J(a{#)J", R"J()J", kOk, R"J(a)J"},
            {"Quirk7",
             R"J({% set ns = namespace(a=1) %}{% set ns.a, b = 5, 6 %}{{ ns.a }}{{ b }}{% set ns.c %}blk{% endset %}{{ ns.c }})J",
             R"J()J", kOk, R"J(56blk)J"},
            {"Quirk8_TemplateSyntaxError", R"J({% set a, = [1] %})J", R"J()J", kSyntax, R"J()J"},
            {"Quirk9",
             R"J({% if false %}{{ x|nosuchfilter }}{{ y is nosuchtest }}{% endif %}{{ 'ok' if true else z|nosuchfilter }})J",
             R"J()J", kOk, R"J(ok)J"},
            {"Quirk10_TemplateAssertionError",
             R"J({% if true %}{% for x in [1] %}{{ x|nosuchfilter }}{% endfor %}{% endif %})J",
             R"J()J", kSyntax, R"J()J"},
            {"Quirk11_TypeError", R"J({{ x is defined y }})J", R"J({"x": 1})J", kError, R"J()J"},
            {"Quirk12_TypeError", R"J({{ d[:1] }})J", R"J({"d": {"a": 1}})J", kError, R"J()J"},
};

// Renders with `messages` taken from the context (default []), add_generation_prompt=False.
std::string render(const char* tmpl, const char* context) {
  ojson ctx = *context ? ojson::parse(context) : ojson::object();
  ojson messages = ctx.contains("messages") ? ctx["messages"] : ojson::array();
  ctx.erase("messages");
  return ChatTemplate(tmpl).render(messages, false, ctx);
}

class Construct : public ::testing::TestWithParam<Case> {};

TEST_P(Construct, MatchesJinja) {
  const Case& c = GetParam();
  SCOPED_TRACE(c.tmpl);
  switch (c.expect) {
    case kOk:
      EXPECT_EQ(render(c.tmpl, c.context), c.result);
      break;
    case kRaise:
      try {
        std::string out = render(c.tmpl, c.context);
        ADD_FAILURE() << "expected raise_exception, got: " << out;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
        EXPECT_STREQ(e.what(), c.result);
      }
      break;
    case kSyntax:
      try {
        ChatTemplate t(c.tmpl);
        ADD_FAILURE() << "parsed without error";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::invalid_model) << e.what();
      }
      break;
    case kError:
      try {
        std::string out = render(c.tmpl, c.context);
        ADD_FAILURE() << "expected an error, got: " << out;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
      }
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(Jinja, Construct, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tessera
