{# bash's and zsh's middle: the command the typed words name, then the value an option takes #}
{% macro cases(commands, shell) %}
        case "$cmd:$word" in
{% for c in commands if c.path %}
            {{ (c.path.rpartition(" ")[0] ~ ":" ~ c.path.rpartition(" ")[2])|q }}) cmd={{ c.path|q }} ;;
{% endfor %}
        esac
    done
    case "$cmd:$prev" in
{% for c in commands %}
{% for o in c.options if o.takes_value and o.choices %}
{% if shell == "bash" %}
        {{ o.names|keys(c.path) }}) COMPREPLY=($(compgen -W {{ o.choices|join(" ")|q }} -- "$cur")); return ;;
{% else %}
        {{ o.names|keys(c.path) }}) compadd -- {{ o.choices|map("q")|join(" ") }}; return ;;
{% endif %}
{% endfor %}
{% set files = c.options|selectattr("takes_value")|rejectattr("choices")|map(attribute="names")|sum(start=[]) %}
{% if files %}
{# a value without choices: a file (bash's own completion, by `complete -o default`) #}
        {{ files|keys(c.path) }}) {{ "" if shell == "bash" else "_files; " }}return ;;
{% endif %}
{% endfor %}
    esac
{%- endmacro %}
