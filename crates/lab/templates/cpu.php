<?php
// webtune lab: a CPU-bound page. Burns `us` microseconds of this process's own CPU time
// (user + system, from getrusage), not of wall-clock time, so that pages which compete for
// CPU take longer, as seed 000's forum did. /cpu/MICROS is rewritten to this page.
$us = isset($_GET['us']) ? (int)$_GET['us'] : 1000;
if ($us < 0) { $us = 0; }
if ($us > 10000000) { $us = 10000000; }
function cpu_us() {
    $r = getrusage();
    return ($r['ru_utime.tv_sec'] + $r['ru_stime.tv_sec']) * 1000000
        + $r['ru_utime.tv_usec'] + $r['ru_stime.tv_usec'];
}
$end = cpu_us() + $us;
$x = 1;
$rounds = 0;
do {
    for ($i = 0; $i < 200; $i++) {
        $x = ($x * 48271) % 2147483647;
    }
    $rounds++;
} while (cpu_us() < $end);
header('Content-Type: text/plain');
header('Cache-Control: no-store');
// Fixed-width numbers: every answer for the same `us` has the same length.
printf("cpu %d us, %010d rounds, %010d\n", $us, $rounds, $x);
