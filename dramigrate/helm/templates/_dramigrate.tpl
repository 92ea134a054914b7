{{- /*
_dramigrate.tpl, written by `dramigrate fix`: device-plugin requests (nvidia.com/gpu: 2 and the like)
become DRA ResourceClaims at render time, the way `dramigrate fix` migrates rendered manifests.

Workload templates that can ask for devices keep their text inside a `define` and render it through
"__P__.migrate"; "__P__.claimTemplates" renders the ResourceClaimTemplates (see
dramigrate-resourceclaimtemplates.yaml). Values keep working as before: whatever device count the
chart's values give is moved into a claim; a count of 0 or no device request renders no claim.
resource.k8s.io/v1 is used when the cluster serves it, then v1beta2, then v1beta1; set
dramigrate.resourceApiVersion (or global.dramigrate.resourceApiVersion) to choose, e.g. for offline
renders that target Kubernetes older than 1.34. Regenerate this file with `dramigrate fix` rather than
editing it: it embeds the rule packs it was written with.
*/ -}}

{{- define "__P__.rules" -}}
{{ `__RULES__` }}
{{- end -}}

{{- define "__P__.apiVersion" -}}
{{- $v := "" -}}
{{- $d := .Values.dramigrate -}}
{{- if and (kindIs "map" $d) (index $d "resourceApiVersion") -}}{{- $v = toString (index $d "resourceApiVersion") -}}{{- end -}}
{{- $g := .Values.global -}}
{{- if and (not $v) (kindIs "map" $g) -}}
  {{- $gd := index $g "dramigrate" -}}
  {{- if and (kindIs "map" $gd) (index $gd "resourceApiVersion") -}}{{- $v = toString (index $gd "resourceApiVersion") -}}{{- end -}}
{{- end -}}
{{- if $v -}}{{ $v }}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1" -}}resource.k8s.io/v1
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta2" -}}resource.k8s.io/v1beta2
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta1" -}}resource.k8s.io/v1beta1
{{- else -}}
{{- fail "devices are requested as DRA ResourceClaims (resource.k8s.io), which this cluster does not serve; enable Dynamic Resource Allocation or set dramigrate.resourceApiVersion" -}}
{{- end -}}
{{- end -}}

{{- define "__P__.state" -}}
{{- $_ := set . "rules" (include "__P__.rules" .root | fromJson) -}}
{{- $_ := set . "seen" dict -}}
{{- $_ := set . "rcts" list -}}
{{- end -}}

{{- define "__P__.migrate" -}}
{{- $st := dict "root" (index . 0) -}}
{{- include "__P__.state" $st -}}
{{- /* Helm blanks "<no value>" in a template's output, but `include` returns it raw: blank it the same way */ -}}
{{- range $piece := regexSplit `(?:^|\s*\n)---\s*` (replace "<no value>" "" (index . 1)) -1 -}}
{{- if trim $piece -}}
{{- $doc := dict "text" $piece "changed" false -}}
{{- include "__P__.document" (dict "st" $st "doc" $doc) -}}
{{- if $doc.changed }}
---
{{ toYaml $doc.obj }}
{{- else }}
---
{{ $piece }}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "__P__.claimTemplates" -}}
{{- $st := dict "root" (index . 0) -}}
{{- include "__P__.state" $st -}}
{{- range $text := index . 1 -}}
{{- range $piece := regexSplit `(?:^|\s*\n)---\s*` (replace "<no value>" "" $text) -1 -}}
{{- if trim $piece -}}
{{- include "__P__.document" (dict "st" $st "doc" (dict "text" $piece "changed" false)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $rct := $st.rcts }}
---
{{ toYaml $rct }}
{{- end -}}
{{- end -}}

{{- define "__P__.document" -}}
{{- $st := .st -}}{{- $doc := .doc -}}{{- $rules := $st.rules -}}
{{- $o := fromYaml $doc.text -}}
{{- if and (kindIs "map" $o) (not (hasKey $o "Error")) -}}
{{- $apiv := toString (default "" (index $o "apiVersion")) -}}
{{- $kind := toString (default "" (index $o "kind")) -}}
{{- $group := "" -}}{{- if contains "/" $apiv -}}{{- $group = regexReplaceAll "/[^/]*$" $apiv "" -}}{{- end -}}
{{- $k := index $rules.kinds (printf "%s/%s" $group $kind) -}}
{{- $meta := index $o "metadata" -}}{{- if not (kindIs "map" $meta) -}}{{- $meta = dict -}}{{- end -}}
{{- $ann := index $meta "annotations" -}}{{- if not (kindIs "map" $ann) -}}{{- $ann = dict -}}{{- end -}}
{{- $name := "" -}}{{- if index $meta "name" -}}{{- $name = toString (index $meta "name") -}}
{{- else if index $meta "generateName" -}}{{- $name = toString (index $meta "generateName") -}}{{- end -}}
{{- $ns := "" -}}{{- if index $meta "namespace" -}}{{- $ns = toString (index $meta "namespace") -}}{{- end -}}
{{- if and (kindIs "map" $k) $name (not (hasKey $ann "dramigrate.io/ignore")) (not (regexMatch `#\s*dramigrate:\s*ignore` $doc.text)) -}}
{{- $accepts := false -}}
{{- if kindIs "bool" $k.accepts -}}{{- $accepts = $k.accepts -}}
{{- else if kindIs "map" $k.accepts -}}
  {{- $av := index $ann $k.accepts.annotation -}}
  {{- if and (kindIs "string" $av) (has $av $k.accepts.values) -}}{{- $accepts = true -}}{{- end -}}
{{- end -}}
{{- if $accepts -}}
{{- $pods := list -}}
{{- range $loc := $k.podSpecs -}}
  {{- $owners := dict "items" list -}}
  {{- include "__P__.walk" (dict "node" $o "segs" $loc.at "key" "" "out" $owners) -}}
  {{- range $ow := $owners.items -}}
  {{- if kindIs "map" $ow.node -}}
    {{- $specs := dict "items" list -}}
    {{- include "__P__.walk" (dict "node" $ow.node "segs" $loc.spec "key" "" "out" $specs) -}}
    {{- range $sp := $specs.items -}}
    {{- if kindIs "map" $sp.node -}}
      {{- $suffix := $loc.name -}}
      {{- if eq $loc.name "{key}" -}}{{- $suffix = $ow.key -}}
      {{- else if and (hasPrefix "{" $loc.name) (hasSuffix "}" $loc.name) -}}
        {{- $fv := index $ow.node (trimSuffix "}" (trimPrefix "{" $loc.name)) -}}
        {{- if kindIs "invalid" $fv -}}{{- $suffix = $ow.key -}}{{- else -}}{{- $suffix = toString $fv -}}{{- end -}}
      {{- end -}}
      {{- $p := dict "st" $st "kind" $k "loc" $loc "owner" $ow.node "spec" $sp.node "suffix" $suffix "name" $name "ns" $ns "text" $doc.text -}}
      {{- include "__P__.analyze" $p -}}
      {{- if $p.uses -}}{{- $pods = append $pods $p -}}{{- end -}}
    {{- end -}}
    {{- end -}}
  {{- end -}}
  {{- end -}}
{{- end -}}
{{- range $p := $pods -}}
  {{- include "__P__.plan" $p -}}
  {{- if $p.rct -}}
    {{- $key := printf "%s/%s" $p.ns $p.rct.metadata.name -}}
    {{- if not (hasKey $st.seen $key) -}}{{- $_ := set $st.seen $key true -}}{{- $_ := set $st "rcts" (append $st.rcts $p.rct) -}}{{- end -}}
  {{- end -}}
{{- end -}}
{{- if $pods -}}{{- $_ := set $doc "obj" $o -}}{{- $_ := set $doc "changed" true -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "__P__.walk" -}}
{{- if not .segs -}}
  {{- $_ := set .out "items" (append .out.items (dict "node" .node "key" .key)) -}}
{{- else -}}
  {{- $seg := first .segs -}}{{- $rest := rest .segs -}}
  {{- $key := trimSuffix "[*]" $seg -}}
  {{- if eq $seg "*" -}}
    {{- if kindIs "map" .node -}}
      {{- range $k, $v := .node -}}{{- include "__P__.walk" (dict "node" $v "segs" $rest "key" $k "out" $.out) -}}{{- end -}}
    {{- end -}}
  {{- else if and (kindIs "map" .node) (hasKey .node $key) -}}
    {{- $child := index .node $key -}}
    {{- if hasSuffix "[*]" $seg -}}
      {{- if kindIs "slice" $child -}}
        {{- range $i, $v := $child -}}{{- include "__P__.walk" (dict "node" $v "segs" $rest "key" (toString $i) "out" $.out) -}}{{- end -}}
      {{- end -}}
    {{- else -}}
      {{- include "__P__.walk" (dict "node" $child "segs" $rest "key" .key "out" .out) -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- end -}}

{{- /* A device count as Kubernetes reads it (resource.Quantity, spaces trimmed): 2, 2.0, "2", "+2", "2000m",
"2e0", "0.2e1", "2k"; a negative, fractional, too large (past int64 thousandths) or unreadable count fails the
render instead of being left out. */ -}}
{{- define "__P__.count" -}}
{{- $bad := "dramigrate: a device count is not a whole number of devices that Kubernetes can read (such as 2, 2.0 or 2000m): write it as an integer" -}}
{{- if kindIs "float64" . -}}
  {{- if and (ge . 0.0) (eq . (floor .)) (le . 9223372036854775.0) -}}{{ int64 . }}
  {{- else if and (gt . 0.0) (lt . 9223372036854775.0) -}}{{- include "__P__.count" (toString .) -}}
  {{- else -}}{{- fail $bad -}}{{- end -}}
{{- else if or (kindIs "int" .) (kindIs "int64" .) -}}
  {{- if and (ge (int64 .) 0) (le (int64 .) 9223372036854775) -}}{{ . }}{{- else -}}{{- fail $bad -}}{{- end -}}
{{- else if kindIs "string" . -}}
  {{- $q := `^\+?([0-9]+)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+)|(n|u|m|k|M|G|T|P|E))?$` -}}
  {{- $s := trim . -}}
  {{- if not (regexMatch $q $s) -}}{{- fail $bad -}}{{- end -}}
  {{- $frac := regexReplaceAll $q $s "${2}" -}}{{- $digits := printf "%s%s" (regexReplaceAll $q $s "${1}") $frac -}}
  {{- $exp := regexReplaceAll $q $s "${3}" -}}{{- $e := 0 -}}{{- if $exp -}}{{- $e = atoi $exp -}}{{- end -}}
  {{- $suffix := regexReplaceAll $q $s "${4}" -}}
  {{- $e = add $e (get (dict "n" -9 "u" -6 "m" -3 "k" 3 "M" 6 "G" 9 "T" 12 "P" 15 "E" 18) $suffix | default 0) -}}
  {{- $digits = regexReplaceAll "^0+" $digits "" -}}{{- $up := 0 -}}
  {{- $shift := sub $e (len $frac) -}}
  {{- if ge $shift 0 -}}
    {{- if and $digits (gt (add (len $digits) $shift) 16) -}}{{- fail $bad -}}{{- end -}}
    {{- if $digits -}}{{- $digits = printf "%s%s" $digits (repeat (int $shift) "0") -}}{{- end -}}
  {{- else if gt (int (mul -1 $shift)) (len $digits) -}}
    {{- if regexMatch "[1-9]" $digits -}}{{- fail $bad -}}{{- end -}}{{- $digits = "" -}}
  {{- else -}}
    {{- $cut := sub (len $digits) (mul -1 $shift) -}}
    {{- $f := substr (int $cut) (len $digits) $digits -}}
    {{- /* Kubernetes rounds thousandths up: 0.99999 is 1, 0.999 a fraction */ -}}
    {{- if regexMatch "[1-9]" $f -}}{{- if regexMatch "^999[0-9]*[1-9]" $f -}}{{- $up = 1 -}}{{- else -}}{{- fail $bad -}}{{- end -}}{{- end -}}
    {{- $digits = substr 0 (int $cut) $digits -}}
  {{- end -}}
  {{- $digits = default "0" $digits -}}
  {{- if or (gt (len $digits) 16) (and (eq (len $digits) 16) (gt $digits (sub 9223372036854775 $up | toString))) -}}{{- fail $bad -}}{{- end -}}
  {{- add (atoi $digits) $up -}}
{{- else -}}none
{{- end -}}
{{- end -}}

{{- define "__P__.entries" -}}
{{- $out := list -}}{{- $seen := dict -}}
{{- range $sec := list "requests" "limits" -}}
  {{- $m := index $.res $sec -}}
  {{- if kindIs "map" $m -}}
    {{- $keyed := list -}}
    {{- range $k, $v := $m -}}
      {{- if and (not (hasKey $seen $k)) (contains "/" $k) (not (regexMatch $.rules.native $k)) -}}
        {{- $pos := len $.text -}}
        {{- range $form := list (printf "%s:" $k) (printf "%q:" $k) (printf "'%s':" $k) -}}
          {{- $at := len (index (splitList $form $.text) 0) -}}{{- if lt $at $pos -}}{{- $pos = $at -}}{{- end -}}
        {{- end -}}
        {{- $keyed = append $keyed (printf "%012d %s" $pos $k) -}}
      {{- end -}}
    {{- end -}}
    {{- range $e := sortAlpha $keyed -}}
      {{- $k := regexReplaceAll "^[0-9]+ " $e "" -}}{{- $_ := set $seen $k true -}}{{- $out = append $out $k -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- define "__P__.lookup" -}}
{{- $found := "" -}}
{{- range $i, $r := $.rules.resources -}}
  {{- if $r.match -}}
    {{- if eq $r.match $.res -}}{{- $found = toJson (dict "i" $i "sel" $r.selectors) -}}{{- break -}}{{- end -}}
  {{- else if regexMatch $r.regex $.res -}}
    {{- $sel := list -}}{{- range $s := $r.selectors -}}{{- $sel = append $sel (regexReplaceAll $r.regex $.res $s) -}}{{- end -}}
    {{- $found = toJson (dict "i" $i "sel" $sel) -}}{{- break -}}
  {{- end -}}
{{- end -}}
{{- $found -}}
{{- end -}}

{{- define "__P__.analyze" -}}
{{- $p := . -}}{{- $rules := $p.st.rules -}}{{- $spec := $p.spec -}}
{{- $hits := dict -}}
{{- range $lbl, $pat := $rules.sharedLabels -}}
  {{- $vals := list -}}
  {{- $nsel := index $spec "nodeSelector" -}}
  {{- if and (kindIs "map" $nsel) (hasKey $nsel $lbl) -}}{{- $vals = append $vals (index $nsel $lbl) -}}{{- end -}}
  {{- $aff := index $spec "affinity" -}}
  {{- $na := dict -}}{{- if kindIs "map" $aff -}}{{- $na = index $aff "nodeAffinity" -}}{{- end -}}
  {{- $rq := dict -}}{{- if kindIs "map" $na -}}{{- $rq = index $na "requiredDuringSchedulingIgnoredDuringExecution" -}}{{- end -}}
  {{- $terms := list -}}{{- if kindIs "map" $rq -}}{{- $terms = index $rq "nodeSelectorTerms" -}}{{- end -}}
  {{- if kindIs "slice" $terms -}}{{- range $term := $terms -}}{{- if kindIs "map" $term -}}
    {{- $exprs := index $term "matchExpressions" -}}
    {{- if kindIs "slice" $exprs -}}{{- range $e := $exprs -}}
      {{- if and (kindIs "map" $e) (eq (toString (index $e "key")) $lbl) (eq (toString (index $e "operator")) "In") -}}
        {{- $ev := index $e "values" -}}{{- if kindIs "slice" $ev -}}{{- $vals = concat $vals $ev -}}{{- end -}}
      {{- end -}}
    {{- end -}}{{- end -}}
  {{- end -}}{{- end -}}{{- end -}}
  {{- /* a toleration of the resource's taint with a -SHARED product value (nvidia.com/gpu=Tesla-T4-SHARED) */ -}}
  {{- $tl := index $spec "tolerations" -}}
  {{- if kindIs "slice" $tl -}}{{- range $t := $tl -}}{{- if kindIs "map" $t -}}
    {{- $tk := toString (index $t "key") -}}{{- $op := index $t "operator" -}}{{- $tv := index $t "value" -}}
    {{- $forLbl := or (eq $tk $lbl) (and (hasKey $rules.sharedTaints $tk) (eq (toString (index $rules.sharedTaints $tk)) $lbl)) -}}
    {{- if and $forLbl (or (kindIs "invalid" $op) (eq (toString $op) "Equal")) (not (kindIs "invalid" $tv)) -}}
      {{- $vals = append $vals $tv -}}
    {{- end -}}
  {{- end -}}{{- end -}}{{- end -}}
  {{- range $v := $vals -}}{{- if regexMatch $pat (toString $v) -}}{{- $_ := set $hits $lbl true -}}{{- end -}}{{- end -}}
{{- end -}}
{{- $ctrs := list -}}
{{- range $lk := $p.kind.lists -}}
  {{- $items := $spec -}}
  {{- range $seg := splitList "." $lk -}}{{- $items = and (kindIs "map" $items) (index $items $seg) -}}{{- end -}}
  {{- if kindIs "slice" $items -}}{{- range $i, $c := $items -}}{{- if kindIs "map" $c -}}
    {{- $init := eq $lk "initContainers" -}}
    {{- $cname := printf "%s[%d]" $lk $i -}}{{- if hasKey $c "name" -}}{{- $cname = toString (index $c "name") -}}{{- end -}}
    {{- $side := and $init (eq (toString (index $c "restartPolicy")) "Always") -}}
    {{- $ctrs = append $ctrs (dict "c" $c "name" $cname "path" (printf "%s[%d]" $lk $i) "index" $i "init" $init "sidecar" $side) -}}
  {{- end -}}{{- end -}}{{- end -}}
{{- end -}}
{{- range $sk := $p.kind.singles -}}
  {{- $c := index $spec $sk -}}
  {{- if kindIs "map" $c -}}
    {{- $cname := $sk -}}{{- if hasKey $c "name" -}}{{- $cname = toString (index $c "name") -}}{{- end -}}
    {{- $ctrs = append $ctrs (dict "c" $c "name" $cname "path" $sk "index" -1 "init" false "sidecar" false) -}}
  {{- end -}}
{{- end -}}
{{- $uses := list -}}
{{- range $ct := $ctrs -}}
  {{- $res := index $ct.c "resources" -}}
  {{- if kindIs "map" $res -}}
    {{- $entries := include "__P__.entries" (dict "res" $res "rules" $rules "text" $p.text) | fromJsonArray -}}
    {{- $slices := dict -}}
    {{- range $r := $entries -}}
      {{- $mj := include "__P__.lookup" (dict "rules" $rules "res" $r) -}}
      {{- if $mj -}}{{- $ro := (index $rules.resources (int (fromJson $mj).i)).reportOnly -}}{{- if and $ro (ne $ro "config") -}}{{- $_ := set $slices (regexReplaceAll "/.*$" $r "") true -}}{{- end -}}{{- end -}}
    {{- end -}}
    {{- range $r := $entries -}}
      {{- $mj := include "__P__.lookup" (dict "rules" $rules "res" $r) -}}
      {{- if $mj -}}
        {{- $m := fromJson $mj -}}
        {{- $rule := index $rules.resources (int $m.i) -}}
        {{- $shared := $rule.reportOnly -}}
        {{- if and (not $shared) $rule.sharingAlways -}}{{- $shared = "setting" -}}{{- end -}}
        {{- if and (not $shared) $rule.sharingLabel (hasKey $hits $rule.sharingLabel) -}}{{- $shared = "label" -}}{{- end -}}
        {{- if and (not $shared) (hasKey $slices (regexReplaceAll "/.*$" $r "")) -}}{{- $shared = "slice" -}}{{- end -}}
        {{- if not $shared -}}
          {{- $lim := index $res "limits" -}}{{- $req := index $res "requests" -}}
          {{- $counts := dict -}}{{- $cnt := "none" -}}
          {{- if and (kindIs "map" $req) (hasKey $req $r) -}}{{- $cnt = include "__P__.count" (index $req $r) -}}{{- $_ := set $counts $cnt true -}}{{- end -}}
          {{- if and (kindIs "map" $lim) (hasKey $lim $r) -}}{{- $cnt = include "__P__.count" (index $lim $r) -}}{{- $_ := set $counts $cnt true -}}{{- end -}}
          {{- if and (ne $cnt "none") (eq (len $counts) 1) -}}
            {{- $uses = append $uses (dict "ct" $ct "res" $r "rule" $rule "count" (atoi $cnt) "sel" $m.sel "setKey" (printf "%s|%s" $rule.class (toJson $m.sel))) -}}
          {{- end -}}
        {{- end -}}
      {{- end -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- $_ := set $p "uses" $uses -}}
{{- end -}}

{{- define "__P__.dnsLabel" -}}
{{- $l := regexReplaceAll "[^a-z0-9-]+" (lower .) "-" | trimAll "-" -}}
{{- $l = regexReplaceAll "-{2,}" $l "-" | trunc 63 | trimAll "-" -}}
{{- default "x" $l -}}
{{- end -}}

{{- define "__P__.unique" -}}
{{- $cand := .name -}}
{{- range $n := untilStep 2 2000 1 -}}
  {{- if not (hasKey $.taken $cand) -}}{{- break -}}{{- end -}}
  {{- $sfx := printf "-%d" $n -}}
  {{- $cand = printf "%s%s" (trunc (int (sub 63 (len $sfx))) $.name) $sfx -}}
{{- end -}}
{{- $_ := set .taken $cand true -}}
{{- $cand -}}
{{- end -}}

{{- define "__P__.nameBase" -}}
{{- $raw := .w -}}{{- if .s -}}{{- $raw = printf "%s-%s" .w .s -}}{{- end -}}
{{- $b := regexReplaceAll "[^a-z0-9.-]+" (lower $raw) "-" -}}
{{- $b = regexReplaceAll "-{2,}" $b "-" | trimAll "-." -}}
{{- $b = regexReplaceAll "[-.]+$" (trunc 244 $b) "" -}}
{{- default "claim" $b -}}
{{- end -}}

{{- define "__P__.covers" -}}
{{- $t := .t -}}{{- $e := index $t "effect" -}}{{- $o := index $t "operator" -}}{{- $k := index $t "key" -}}
{{- $effOk := or (kindIs "invalid" $e) (and (kindIs "string" $e) (or (eq $e "") (eq $e .w.effect))) -}}
{{- $opOk := and (kindIs "string" $o) (eq $o "Exists") -}}
{{- $keyOk := or (kindIs "invalid" $k) (and (kindIs "string" $k) (or (eq $k "") (eq $k .w.key))) -}}
{{- if and $effOk $opOk $keyOk -}}yes{{- end -}}
{{- end -}}

{{- define "__P__.addRequest" -}}
{{- $rq := dict "name" (include "__P__.unique" (dict "name" (include "__P__.dnsLabel" .base) "taken" .plan.taken)) "class" .u.rule.class "count" (int .count) "sel" .u.sel "config" .u.rule.config -}}
{{- $_ := set .plan "requests" (append .plan.requests $rq) -}}
{{- if .app -}}
  {{- if not (hasKey .plan.appReq .u.setKey) -}}{{- $_ := set .plan.appReq .u.setKey list -}}{{- $_ := set .plan "appKeys" (append .plan.appKeys .u.setKey) -}}{{- end -}}
  {{- $_ := set .plan.appReq .u.setKey (append (index .plan.appReq .u.setKey) (dict "req" $rq "u" .u)) -}}
{{- end -}}
{{- $_ := set .plan "last" $rq -}}
{{- end -}}

{{- define "__P__.plan" -}}
{{- $p := . -}}
{{- $pl := dict "taken" dict "requests" list "appReq" dict "appKeys" list "last" dict -}}
{{- $uses := list -}}{{- $app := list -}}{{- $init := list -}}
{{- range $u := $p.uses -}}{{- if gt $u.count 0 -}}
  {{- $uses = append $uses $u -}}
  {{- if or (not $u.ct.init) $u.ct.sidecar -}}{{- $app = append $app $u -}}{{- else -}}{{- $init = append $init $u -}}{{- end -}}
{{- end -}}{{- end -}}
{{- $perSet := dict -}}{{- $perCtr := dict -}}
{{- range $u := $app -}}
  {{- if not (hasKey $perSet $u.rule.request) -}}{{- $_ := set $perSet $u.rule.request dict -}}{{- end -}}
  {{- $_ := set (index $perSet $u.rule.request) $u.ct.path true -}}
  {{- $pk := printf "%s|%s" $u.ct.path $u.rule.request -}}
  {{- if not (hasKey $perCtr $pk) -}}{{- $_ := set $perCtr $pk dict -}}{{- end -}}
  {{- $_ := set (index $perCtr $pk) $u.res true -}}
{{- end -}}
{{- /* GPU/NIC pairs (--align-nics required): N GPUs with k*N NICs become N (1 GPU, k NICs) groups under one PCIe
root each */ -}}
{{- $constraints := list -}}{{- $paired := dict -}}
{{- if and (not $init) (eq (toString $p.st.rules.alignNics) "required") -}}
  {{- $byC := dict -}}{{- $byCKeys := list -}}
  {{- range $u := $app -}}
    {{- if not (hasKey $byC $u.ct.path) -}}{{- $_ := set $byC $u.ct.path list -}}{{- $byCKeys = append $byCKeys $u.ct.path -}}{{- end -}}
    {{- $_ := set $byC $u.ct.path (append (index $byC $u.ct.path) $u) -}}
  {{- end -}}
  {{- range $ck := $byCKeys -}}
    {{- $gpus := list -}}{{- $nics := list -}}
    {{- range $u := index $byC $ck -}}{{- if $u.rule.nic -}}{{- $nics = append $nics $u -}}{{- else -}}{{- $gpus = append $gpus $u -}}{{- end -}}{{- end -}}
    {{- $ok := and (eq (len $gpus) 1) (gt (len $nics) 0) -}}
    {{- if $ok -}}
      {{- $g := index $gpus 0 -}}
      {{- if lt $g.count 1 -}}{{- $ok = false -}}{{- end -}}
      {{- if $ok -}}{{- range $nic := $nics -}}{{- if ne (int (mod $nic.count $g.count)) 0 -}}{{- $ok = false -}}{{- end -}}{{- end -}}{{- end -}}
      {{- if gt (int (mul $g.count (add 1 (len $nics)))) 32 -}}{{- $ok = false -}}{{- end -}}
      {{- if $ok -}}
        {{- $prefix := "" -}}{{- if gt (len $byCKeys) 1 -}}{{- $prefix = printf "%s-" $g.ct.name -}}{{- end -}}
        {{- range $i := until (int $g.count) -}}
          {{- $names := list -}}
          {{- $members := list (dict "u" $g "count" 1) -}}
          {{- range $nic := $nics -}}{{- $members = append $members (dict "u" $nic "count" (div $nic.count $g.count)) -}}{{- end -}}
          {{- range $mb := $members -}}
            {{- include "__P__.addRequest" (dict "plan" $pl "u" $mb.u "count" $mb.count "app" true "base" (printf "%s%s-%d" $prefix $mb.u.rule.request $i)) -}}
            {{- $names = append $names $pl.last.name -}}
          {{- end -}}
          {{- $constraints = append $constraints (dict "requests" $names "matchAttribute" "resource.kubernetes.io/pcieRoot") -}}
        {{- end -}}
        {{- $_ := set $paired (printf "%s|%s" $g.ct.path $g.res) true -}}
        {{- range $nic := $nics -}}{{- $_ := set $paired (printf "%s|%s" $nic.ct.path $nic.res) true -}}{{- end -}}
      {{- end -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- /* one request per (app container, device set); the container's name when several share the set */ -}}
{{- range $u := $app -}}
  {{- if not (hasKey $paired (printf "%s|%s" $u.ct.path $u.res)) -}}
    {{- $base := $u.rule.request -}}
    {{- if gt (len (index $perCtr (printf "%s|%s" $u.ct.path $u.rule.request))) 1 -}}{{- $base = regexReplaceAll "^[^/]*/" $u.res "" -}}{{- end -}}
    {{- if gt (len (index $perSet $u.rule.request)) 1 -}}{{- $base = printf "%s-%s" $u.ct.name $base -}}{{- end -}}
    {{- include "__P__.addRequest" (dict "plan" $pl "u" $u "count" $u.count "app" true "base" $base) -}}
  {{- end -}}
{{- end -}}
{{- /* plain init containers reuse the app containers' devices, and those of sidecars that start after them
(a sidecar started earlier is still running); a larger init request adds the difference. Each gets exactly its
count: a request that would give it more is split where its share ends (gpu: 2 -> gpu-a: 1, gpu-b: 1) */ -}}
{{- $extra := dict -}}{{- $seqs := list -}}
{{- range $u := $init -}}
  {{- $pool := list -}}
  {{- range $e := index $pl.appReq $u.setKey | default list -}}
    {{- if not (and $e.u.ct.sidecar (lt (int $e.u.ct.index) (int $u.ct.index))) -}}{{- $pool = append $pool $e.req -}}{{- end -}}
  {{- end -}}
  {{- $have := 0 -}}{{- range $r := $pool -}}{{- $have = add $have $r.count -}}{{- end -}}
  {{- if gt $u.count (int $have) -}}
    {{- if not (hasKey $extra $u.setKey) -}}
      {{- include "__P__.addRequest" (dict "plan" $pl "u" $u "count" 0 "app" false "base" (printf "%s-init" $u.rule.request)) -}}
      {{- $_ := set $extra $u.setKey $pl.last -}}
    {{- end -}}
    {{- $rq := index $extra $u.setKey -}}
    {{- $_ := set $rq "count" (int (max (int $rq.count) (sub $u.count (int $have)))) -}}
  {{- end -}}
  {{- $seqs = append $seqs (dict "u" $u "pool" $pool) -}}
{{- end -}}
{{- $cuts := dict -}}
{{- range $s := $seqs -}}
  {{- $seq := $s.pool -}}{{- if hasKey $extra $s.u.setKey -}}{{- $seq = append $seq (index $extra $s.u.setKey) -}}{{- end -}}
  {{- $_ := set $s "seq" $seq -}}
  {{- $cov := 0 -}}
  {{- range $r := $seq -}}
    {{- if gt (int (add $cov $r.count)) $s.u.count -}}
      {{- if gt $s.u.count (int $cov) -}}
        {{- $_ := set $cuts $r.name (append (index $cuts $r.name | default list) (int (sub $s.u.count (int $cov)))) -}}
      {{- end -}}
      {{- break -}}
    {{- end -}}
    {{- $cov = add $cov $r.count -}}
  {{- end -}}
{{- end -}}
{{- $pieces := dict -}}
{{- if $cuts -}}
  {{- $reqs := list -}}
  {{- range $r := $pl.requests -}}
    {{- if hasKey $cuts $r.name -}}
      {{- $at := index $cuts $r.name -}}{{- $ps := list -}}{{- $lo := 0 -}}
      {{- range $i := untilStep 1 (int (add $r.count 1)) 1 -}}
        {{- if or (has $i $at) (eq $i (int $r.count)) -}}
          {{- $n := len $ps -}}{{- $sfx := printf "%d" $n -}}{{- if lt $n 26 -}}{{- $sfx = printf "%c" (add 97 $n) -}}{{- end -}}
          {{- $nm := include "__P__.unique" (dict "name" (include "__P__.dnsLabel" (printf "%s-%s" $r.name $sfx)) "taken" $pl.taken) -}}
          {{- $ps = append $ps (dict "name" $nm "class" $r.class "count" (int (sub $i $lo)) "sel" $r.sel "config" $r.config) -}}
          {{- $lo = $i -}}
        {{- end -}}
      {{- end -}}
      {{- $_ := set $pieces $r.name $ps -}}{{- $reqs = concat $reqs $ps -}}
    {{- else -}}{{- $reqs = append $reqs $r -}}{{- end -}}
  {{- end -}}
  {{- $_ := set $pl "requests" $reqs -}}
  {{- range $k := $pl.appKeys -}}
    {{- $es := list -}}
    {{- range $e := index $pl.appReq $k -}}
      {{- range $pc := index $pieces $e.req.name | default (list $e.req) -}}{{- $es = append $es (dict "req" $pc "u" $e.u) -}}{{- end -}}
    {{- end -}}
    {{- $_ := set $pl.appReq $k $es -}}
  {{- end -}}
{{- end -}}
{{- $initRefs := dict -}}{{- $initKeys := list -}}
{{- range $s := $seqs -}}
  {{- $u := $s.u -}}{{- $refs := list -}}{{- $cov := 0 -}}
  {{- range $r := $s.seq -}}
    {{- range $pc := index $pieces $r.name | default (list $r) -}}
      {{- if lt (int $cov) $u.count -}}{{- $refs = append $refs $pc.name -}}{{- $cov = add $cov $pc.count -}}{{- end -}}
    {{- end -}}
  {{- end -}}
  {{- if not (hasKey $initRefs $u.ct.path) -}}{{- $_ := set $initRefs $u.ct.path list -}}{{- $initKeys = append $initKeys $u.ct.path -}}{{- end -}}
  {{- $_ := set $initRefs $u.ct.path (concat (index $initRefs $u.ct.path) $refs) -}}
{{- end -}}
{{- $claim := "" -}}{{- $cclaims := dict -}}{{- $tname := "" -}}
{{- if $pl.requests -}}
  {{- $total := 0 -}}{{- range $r := $pl.requests -}}{{- $total = add $total $r.count -}}{{- end -}}
  {{- if gt (int $total) 32 -}}{{- fail "dramigrate: a pod asks for more than 32 devices, and the scheduler allocates at most 32 to one claim (AllocationResultsMaxSize); lower the counts in values or run `dramigrate fix` on the rendered manifests, which splits the devices into one claim per device class" -}}{{- end -}}
  {{- $takenClaims := dict -}}
  {{- $rcs := index $p.spec "resourceClaims" -}}
  {{- if kindIs "slice" $rcs -}}{{- range $c := $rcs -}}{{- if kindIs "map" $c -}}{{- $_ := set $takenClaims (toString (index $c "name")) true -}}{{- end -}}{{- end -}}{{- end -}}
  {{- $bases := list -}}{{- range $u := $uses -}}{{- if not (has $u.rule.request $bases) -}}{{- $bases = append $bases $u.rule.request -}}{{- end -}}{{- end -}}
  {{- $cb := "devices" -}}{{- if le (len $bases) 2 -}}{{- $cb = join "-" $bases -}}{{- end -}}
  {{- $claim = include "__P__.unique" (dict "name" (include "__P__.dnsLabel" $cb) "taken" $takenClaims) -}}
  {{- $byCtr := dict -}}{{- $byCtrKeys := list -}}
  {{- range $k := $pl.appKeys -}}{{- range $e := index $pl.appReq $k -}}
    {{- if not (hasKey $byCtr $e.u.ct.path) -}}{{- $_ := set $byCtr $e.u.ct.path list -}}{{- $byCtrKeys = append $byCtrKeys $e.u.ct.path -}}{{- end -}}
    {{- $_ := set $byCtr $e.u.ct.path (append (index $byCtr $e.u.ct.path) $e.req.name) -}}
  {{- end -}}{{- end -}}
  {{- range $k := $initKeys -}}
    {{- if not (hasKey $byCtr $k) -}}{{- $_ := set $byCtr $k list -}}{{- $byCtrKeys = append $byCtrKeys $k -}}{{- end -}}
    {{- range $n := index $initRefs $k -}}{{- if not (has $n (index $byCtr $k)) -}}{{- $_ := set $byCtr $k (append (index $byCtr $k) $n) -}}{{- end -}}{{- end -}}
  {{- end -}}
  {{- if eq (len $byCtrKeys) 1 -}}
    {{- $_ := set $cclaims (index $byCtrKeys 0) (list (dict "name" $claim)) -}}
  {{- else -}}
    {{- range $k := $byCtrKeys -}}
      {{- $ents := list -}}{{- range $n := uniq (index $byCtr $k) -}}{{- $ents = append $ents (dict "name" $claim "request" $n) -}}{{- end -}}
      {{- $_ := set $cclaims $k $ents -}}
    {{- end -}}
  {{- end -}}
  {{- /* the ResourceClaimTemplate, named <workload>-<first 8 hex of sha256(toJson spec)> as the core names it */ -}}
  {{- if not (hasKey $p.st "api") -}}{{- $_ := set $p.st "api" (include "__P__.apiVersion" $p.st.root) -}}{{- end -}}
  {{- $flat := hasSuffix "v1beta1" $p.st.api -}}
  {{- $reqObjs := list -}}
  {{- range $r := $pl.requests -}}
    {{- $ex := dict "deviceClassName" $r.class -}}
    {{- if $r.sel -}}
      {{- $cel := list -}}{{- range $s := $r.sel -}}{{- $cel = append $cel (dict "cel" (dict "expression" $s)) -}}{{- end -}}
      {{- $_ := set $ex "selectors" $cel -}}
    {{- end -}}
    {{- $_ := set $ex "allocationMode" "ExactCount" -}}{{- $_ := set $ex "count" (int $r.count) -}}
    {{- if $flat -}}{{- $_ := set $ex "name" $r.name -}}{{- $reqObjs = append $reqObjs $ex -}}
    {{- else -}}{{- $reqObjs = append $reqObjs (dict "name" $r.name "exactly" $ex) -}}{{- end -}}
  {{- end -}}
  {{- $devices := dict "requests" $reqObjs -}}
  {{- if $constraints -}}{{- $_ := set $devices "constraints" $constraints -}}{{- end -}}
  {{- $config := list -}}
  {{- range $r := $pl.requests -}}{{- range $c := $r.config -}}
    {{- $config = append $config (mergeOverwrite (dict "requests" (list $r.name)) (deepCopy $c)) -}}
  {{- end -}}{{- end -}}
  {{- if $config -}}{{- $_ := set $devices "config" $config -}}{{- end -}}
  {{- $specObj := dict "spec" (dict "devices" $devices) -}}
  {{- $tname = printf "%s-%s" (include "__P__.nameBase" (dict "w" $p.name "s" $p.suffix)) (toJson $specObj | sha256sum | trunc 8) -}}
  {{- $md := dict "name" $tname -}}{{- if $p.ns -}}{{- $_ := set $md "namespace" $p.ns -}}{{- end -}}
  {{- $_ := set $p "rct" (dict "apiVersion" $p.st.api "kind" "ResourceClaimTemplate" "metadata" $md "spec" (deepCopy $specObj)) -}}
{{- end -}}
{{- /* the toleration ExtendedResourceToleration added for each removed resource */ -}}
{{- $tols := list -}}{{- $existing := list -}}
{{- $pt := index $p.spec "tolerations" -}}
{{- if kindIs "slice" $pt -}}{{- range $t := $pt -}}{{- if kindIs "map" $t -}}{{- $existing = append $existing $t -}}{{- end -}}{{- end -}}{{- end -}}
{{- $seenRes := list -}}
{{- range $u := $p.uses -}}{{- if and (ne (toString $p.st.rules.erToleration) "false") (not (has $u.res $seenRes)) -}}
  {{- $seenRes = append $seenRes $u.res -}}
  {{- $w := dict "key" $u.res "operator" "Exists" "effect" "NoSchedule" -}}
  {{- $covered := false -}}
  {{- range $t := $existing -}}{{- if include "__P__.covers" (dict "t" $t "w" $w) -}}{{- $covered = true -}}{{- end -}}{{- end -}}
  {{- if not $covered -}}{{- $tols = append $tols $w -}}{{- $existing = append $existing $w -}}{{- end -}}
{{- end -}}{{- end -}}
{{- /* KubeRay builds `ray start` from the Ray container's (containers[0]) limits: write out what it derived
     (num-gpus from the first GPU key, resources {"TPU": n} from the first custom accelerator; dramigrate/ray.py) */ -}}
{{- $rayParams := dict -}}
{{- if $p.loc.rayPath -}}
  {{- $rp0 := index $p.owner $p.loc.rayPath -}}{{- if not (kindIs "map" $rp0) -}}{{- $rp0 = dict -}}{{- end -}}
  {{- $lim0 := dict -}}
  {{- $cl := index $p.spec "containers" -}}
  {{- if and (kindIs "slice" $cl) $cl -}}{{- $c0 := index $cl 0 -}}{{- if kindIs "map" $c0 -}}
    {{- $r0 := index $c0 "resources" -}}
    {{- if kindIs "map" $r0 -}}{{- $l := index $r0 "limits" -}}{{- if kindIs "map" $l -}}{{- $lim0 = $l -}}{{- end -}}{{- end -}}
  {{- end -}}{{- end -}}
  {{- $migrated := dict -}}
  {{- range $u := $p.uses -}}{{- if eq $u.ct.path "containers[0]" -}}{{- $_ := set $migrated $u.res true -}}{{- end -}}{{- end -}}
  {{- $keys := list -}}
  {{- range $k, $_ := $lim0 -}}{{- if and (contains "/" $k) (not (regexMatch $p.st.rules.native $k)) -}}{{- $keys = append $keys $k -}}{{- end -}}{{- end -}}
  {{- $info := list -}}
  {{- range $k := sortAlpha $keys -}}
    {{- $gpu := hasSuffix "gpu" $k -}}{{- $rr := "" -}}
    {{- $mj := include "__P__.lookup" (dict "rules" $p.st.rules "res" $k) -}}
    {{- if $mj -}}{{- $rule := index $p.st.rules.resources (int (fromJson $mj).i) -}}{{- $gpu = $rule.rayNumGpus -}}{{- $rr = $rule.rayResource -}}{{- end -}}
    {{- $info = append $info (dict "k" $k "gpu" $gpu "rr" $rr "n" (include "__P__.count" (index $lim0 $k))) -}}
  {{- end -}}
  {{- if not (hasKey $rp0 "num-gpus") -}}
    {{- range $i := $info -}}{{- if and $i.gpu (ne $i.n "0") -}}
      {{- if and (hasKey $migrated $i.k) (ne $i.n "none") -}}{{- $_ := set $rayParams "num-gpus" $i.n -}}{{- end -}}{{- break -}}
    {{- end -}}{{- end -}}
  {{- end -}}
  {{- $cur := dict -}}{{- $ok := true -}}
  {{- if hasKey $rp0 "resources" -}}
    {{- $parsed := fromJson (trimAll "'\"` " (toString (index $rp0 "resources"))) -}}
    {{- if hasKey $parsed "Error" -}}{{- $ok = false -}}{{- else -}}{{- $cur = $parsed -}}{{- end -}}
  {{- end -}}
  {{- if $ok -}}
    {{- $present := false -}}
    {{- range $r := $p.st.rules.resources -}}{{- if and $r.rayResource (hasKey $cur $r.rayResource) -}}{{- $present = true -}}{{- end -}}{{- end -}}
    {{- if not $present -}}
      {{- range $i := $info -}}{{- if and $i.rr (ne $i.n "0") -}}
        {{- if and (hasKey $migrated $i.k) (ne $i.n "none") -}}
          {{- $_ := set $cur $i.rr (atoi $i.n) -}}{{- $_ := set $rayParams "resources" (printf "'%s'" (toJson $cur)) -}}
        {{- end -}}{{- break -}}
      {{- end -}}{{- end -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- /* apply: the same edits apply.py makes */ -}}
{{- range $u := $p.uses -}}
  {{- $res := index $u.ct.c "resources" -}}
  {{- if kindIs "map" $res -}}
    {{- range $sec := list "limits" "requests" -}}
      {{- $m := index $res $sec -}}
      {{- if and (kindIs "map" $m) (hasKey $m $u.res) -}}
        {{- $_ := unset $m $u.res -}}{{- if not $m -}}{{- $_ := unset $res $sec -}}{{- end -}}
      {{- end -}}
    {{- end -}}
    {{- if and (not $res) (not (hasKey $cclaims $u.ct.path)) -}}{{- $_ := unset $u.ct.c "resources" -}}{{- end -}}
  {{- end -}}
{{- end -}}
{{- if $pl.requests -}}
  {{- $rcs := index $p.spec "resourceClaims" -}}{{- if not (kindIs "slice" $rcs) -}}{{- $rcs = list -}}{{- end -}}
  {{- $_ := set $p.spec "resourceClaims" (append $rcs (dict "name" $claim "resourceClaimTemplateName" $tname)) -}}
  {{- range $u := $p.uses -}}
    {{- if hasKey $cclaims $u.ct.path -}}
      {{- $ents := index $cclaims $u.ct.path -}}{{- $_ := unset $cclaims $u.ct.path -}}
      {{- if not (hasKey $u.ct.c "resources") -}}{{- $_ := set $u.ct.c "resources" dict -}}{{- end -}}
      {{- $res := index $u.ct.c "resources" -}}
      {{- if kindIs "map" $res -}}
        {{- $ex := index $res "claims" -}}{{- if not (kindIs "slice" $ex) -}}{{- $ex = list -}}{{- end -}}
        {{- range $e := $ents -}}
          {{- $dup := false -}}
          {{- range $x := $ex -}}{{- if and (kindIs "map" $x) (eq (toJson $x) (toJson $e)) -}}{{- $dup = true -}}{{- end -}}{{- end -}}
          {{- if not $dup -}}{{- $ex = append $ex $e -}}{{- end -}}
        {{- end -}}
        {{- $_ := set $res "claims" $ex -}}
      {{- end -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- if $tols -}}
  {{- $tl := index $p.spec "tolerations" -}}{{- if not (kindIs "slice" $tl) -}}{{- $tl = list -}}{{- end -}}
  {{- $_ := set $p.spec "tolerations" (concat $tl $tols) -}}
{{- end -}}
{{- if $rayParams -}}
  {{- if not (hasKey $p.owner $p.loc.rayPath) -}}{{- $_ := set $p.owner $p.loc.rayPath $rayParams -}}
  {{- else -}}
    {{- $rp := index $p.owner $p.loc.rayPath -}}
    {{- if kindIs "map" $rp -}}{{- range $k, $v := $rayParams -}}{{- $_ := set $rp $k $v -}}{{- end -}}{{- end -}}
  {{- end -}}
{{- end -}}
{{- end -}}
