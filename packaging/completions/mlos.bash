# SPDX-License-Identifier: Apache-2.0
# bash completion for mlos, mlOS's command-line tool (docs/cli.md).
# Installed as share/bash-completion/completions/mlos; works with or without
# the bash-completion package (source it from ~/.bashrc otherwise).
# tests/e2e/test_cli_usability.py checks that every option `mlos SUB --help`
# lists is offered here, so this list cannot drift from the CLI unseen.

_mlos() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local prev=${COMP_WORDS[COMP_CWORD-1]}
  COMPREPLY=()

  # The subcommand (policy's too), CMD's first word when `mlos run` was
  # given one without `--`, and where `--` starts CMD.
  local i w sub="" subsub="" dashdash="" command=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [[ $sub == run && $w == -- ]]; then
      dashdash=$i
      break
    fi
    [[ $w == -* ]] && continue
    case ${COMP_WORDS[i-1]} in
      # option values are not subcommands
      --socket|--source|--dir|--policy-host|--cpus|--cpu-list|--mem|--numa|--label|--policy|-d|--interval|-n|--iterations)
        continue ;;
    esac
    if [[ -z $sub ]]; then
      sub=$w
    elif [[ $sub == run ]]; then
      command=$w
    elif [[ $sub == policy && -z $subsub ]]; then
      subsub=$w
    fi
  done

  # After `mlos run ... --`: CMD and its arguments.
  if [[ -n $dashdash ]]; then
    if ((COMP_CWORD == dashdash + 1)); then
      COMPREPLY=($(compgen -c -- "$cur"))
    else
      COMPREPLY=($(compgen -f -- "$cur"))
    fi
    return 0
  fi

  case $prev in
    --socket|--policy-host)
      COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
    --dir)
      COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
    --source)
      if [[ $sub == policy ]]; then
        COMPREPLY=($(compgen -W "auto daemon embedded" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "auto daemon ledger" -- "$cur"))
      fi
      return 0 ;;
    --numa)
      local nodes=""
      for w in /sys/devices/system/node/node[0-9]*; do [[ -e $w ]] && nodes+=" ${w##*/node}"; done
      COMPREPLY=($(compgen -W "auto$nodes" -- "$cur")); return 0 ;;
    --cpus|--cpu-list|--mem|--label|--policy|-d|--interval|-n|--iterations)
      return 0 ;;  # a value of the user's own
  esac

  local words="" opts="-h --help"
  case $sub in
    "")
      words="topo status top daemon run policy env"
      opts="-h --help --version" ;;
    topo)
      opts="--json -h --help" ;;
    env)
      opts="--markdown -h --help" ;;
    status)
      opts="--json --source --socket -h --help" ;;
    top)
      opts="--socket -d --interval -n --iterations -b --batch -h --help" ;;
    run)
      opts="--cpus --cpu-list --mem --numa --exclusive --strict-mem --single-node --gpus --shared-gpus --gpu-memory --gpu-share --no-thread-env
            --no-python-hooks --profile --store-secret --no-tune --explain --label --policy --dry-run --json -v --verbose
            -h --help --" ;;
    policy)
      case $subsub in
        "") words="list info load unload" ;;
        list) opts="--source --json --socket -h --help" ;;
        load|unload) opts="--json --socket -h --help" ;;
        info) opts="--dir --policy-host --json --socket -h --help" ;;
      esac ;;
    daemon)
      # mlosd's own options: `mlos daemon -h --help` lists them.
      COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
  esac

  if [[ $cur == -* || ( -z $words && $sub != run ) ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ -n $words ]]; then
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
  elif [[ -z $command ]]; then
    # mlos run CMD without `--`: a command name, then its arguments.
    COMPREPLY=($(compgen -c -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
  return 0
}
complete -F _mlos mlos
