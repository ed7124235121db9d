<?php
// webtune lab forum: the code every page shares — configuration, the database connection,
// parameter checks, escaping and the page layout. Our own small forum in the shape of
// phpBB's three busiest pages (seed 003): the board index, a forum's topic list and a
// thread — and, for logged-in users, phpBB's login (ucp.php) and reply (posting.php). Every
// query is a prepared statement; every value printed goes through h().
declare(strict_types=1);

mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);

/** The configuration the lab rendered for this run (socket, database, account, paging). */
function forum_config(): array
{
    static $config = null;
    if ($config === null) {
        $config = require __DIR__ . '/forum-config.php';
    }
    return $config;
}

/** Escape text for HTML (element content and quoted attributes). */
function h(string $text): string
{
    return htmlspecialchars($text, ENT_QUOTES | ENT_SUBSTITUTE | ENT_HTML5, 'UTF-8');
}

/** A connection to the private MariaDB over its unix socket. */
function forum_db(): mysqli
{
    $c = forum_config();
    $db = new mysqli('localhost', $c['user'], $c['password'], $c['database'], 0, $c['socket']);
    $db->set_charset('utf8mb4');
    return $db;
}

/** Rows of a prepared statement, as associative arrays. */
function forum_rows(mysqli $db, string $sql, string $types = '', array $params = []): array
{
    $statement = $db->prepare($sql);
    if ($types !== '') {
        $statement->bind_param($types, ...$params);
    }
    $statement->execute();
    $rows = $statement->get_result()->fetch_all(MYSQLI_ASSOC);
    $statement->close();
    return $rows;
}

/** A statement that returns no rows (an INSERT or UPDATE). */
function forum_exec(mysqli $db, string $sql, string $types, array $params): void
{
    $statement = $db->prepare($sql);
    $statement->bind_param($types, ...$params);
    $statement->execute();
    $statement->close();
}

/** Thrown for an id that names nothing (or is not an id): answered with 404. */
final class NotFound extends Exception
{
}

/** Thrown for a request this user may not make (not logged in, a wrong token): 403. */
final class Forbidden extends Exception
{
}

/** Thrown for a form that cannot be used (an empty message): 400. */
final class BadRequest extends Exception
{
}

/** A POST form field as text; missing or not text: ''. */
function post_param(string $name): string
{
    $value = $_POST[$name] ?? '';
    return is_string($value) ? $value : '';
}

/** The session cookie's name (phpBB's is "phpbb3_xxxxx_sid"). */
const SESSION_COOKIE = 'forum_sid';

/**
 * The logged-in user of this request, from the session cookie: ['id', 'user_id', 'name',
 * 'form_token'], or null for a guest (no cookie, or one that names no session). As phpBB,
 * a session's time is refreshed at most once a minute, so a logged-in page view reads its
 * session and only sometimes writes it.
 */
function forum_session(mysqli $db): ?array
{
    $sid = $_COOKIE[SESSION_COOKIE] ?? '';
    if (!is_string($sid) || preg_match('/^[0-9a-f]{32}$/', $sid) !== 1) {
        return null;
    }
    $rows = forum_rows(
        $db,
        'SELECT s.user_id, s.form_token, s.seen, u.name
           FROM sessions s JOIN users u ON u.id = s.user_id
          WHERE s.id = ?',
        's',
        [$sid]
    );
    if (!$rows) {
        return null;
    }
    $now = time();
    if ((int)$rows[0]['seen'] < $now - 60) {
        forum_exec($db, 'UPDATE sessions SET seen = ? WHERE id = ?', 'is', [$now, $sid]);
    }
    return [
        'id' => $sid,
        'user_id' => (int)$rows[0]['user_id'],
        'name' => $rows[0]['name'],
        'form_token' => $rows[0]['form_token'],
    ];
}

/** A fresh random token of $bytes bytes, as hex. */
function random_hex(int $bytes): string
{
    return bin2hex(random_bytes($bytes));
}

/**
 * The login form's token: the time it was made and an HMAC of it under this run's secret,
 * so a login needs a form fetched within the hour (phpBB's form tokens work alike) and
 * the token needs no session to be kept in.
 */
function login_form_token(): string
{
    $time = (string)time();
    return $time . '.' . hash_hmac('sha256', 'login:' . $time, forum_config()['secret']);
}

function login_form_token_ok(string $token): bool
{
    $parts = explode('.', $token);
    if (count($parts) !== 2 || preg_match('/^[0-9]{1,12}$/', $parts[0]) !== 1) {
        return false;
    }
    $age = time() - (int)$parts[0];
    $expected = hash_hmac('sha256', 'login:' . $parts[0], forum_config()['secret']);
    return $age >= -60 && $age <= 3600 && hash_equals($expected, $parts[1]);
}

/**
 * A positive integer query parameter. Missing: $default (or 404 when null); anything
 * but plain digits, or a number beyond the columns' range: 404.
 */
function id_param(string $name, ?int $default = null): int
{
    if (!isset($_GET[$name])) {
        if ($default === null) {
            throw new NotFound("missing parameter $name");
        }
        return $default;
    }
    $value = $_GET[$name];
    if (!is_string($value) || preg_match('/^[1-9][0-9]{0,9}$/', $value) !== 1 || (int)$value > 4294967295) {
        throw new NotFound("bad parameter $name");
    }
    return (int)$value;
}

/** Pages needed for $items items, at least one. */
function page_count(int $items, int $per_page): int
{
    return max(1, intdiv($items + $per_page - 1, $per_page));
}

function format_time(int $time): string
{
    return gmdate('D M j, Y g:i a', $time);
}

function user_link(int $id, string $name): string
{
    return '<a href="/memberlist.php?mode=viewprofile&amp;u=' . $id . '" class="username">' . h($name) . '</a>';
}

/** Links to the pages around the current one (phpBB's pagination block). */
function pagination(string $base, int $page, int $pages): string
{
    if ($pages <= 1) {
        return '<div class="pagination">Page <strong>1</strong> of <strong>1</strong></div>';
    }
    $html = '<div class="pagination">Page <strong>' . $page . '</strong> of <strong>' . $pages . '</strong> <ul>';
    if ($page > 1) {
        $html .= '<li class="previous"><a href="' . h($base . '&page=' . ($page - 1)) . '" rel="prev">Previous</a></li>';
    }
    $shown = [];
    foreach ([1, $page - 2, $page - 1, $page, $page + 1, $page + 2, $pages] as $p) {
        if ($p >= 1 && $p <= $pages && !isset($shown[$p])) {
            $shown[$p] = true;
        }
    }
    ksort($shown);
    $last = 0;
    foreach (array_keys($shown) as $p) {
        if ($last && $p > $last + 1) {
            $html .= '<li class="ellipsis"><span>…</span></li>';
        }
        if ($p === $page) {
            $html .= '<li class="active"><span>' . $p . '</span></li>';
        } else {
            $html .= '<li><a href="' . h($base . '&page=' . $p) . '">' . $p . '</a></li>';
        }
        $last = $p;
    }
    if ($page < $pages) {
        $html .= '<li class="next"><a href="' . h($base . '&page=' . ($page + 1)) . '" rel="next">Next</a></li>';
    }
    return $html . '</ul></div>';
}

/**
 * The page around the content: head, header, navigation (the login link, or the logged-in
 * user's name), breadcrumbs, footer.
 */
function layout(string $title, array $crumbs, string $content, ?array $session = null): string
{
    $account = $session === null
        ? '<li><a href="/ucp.php?mode=login">Login</a></li>'
        : '<li class="username">Logged in as <strong>' . h($session['name']) . '</strong></li>';
    $nav = '<a href="/index.php">Board index</a>';
    foreach ($crumbs as [$label, $href]) {
        $nav .= ' <span class="crumb">&#8250;</span> <a href="' . h($href) . '">' . h($label) . '</a>';
    }
    return '<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>' . h($title) . ' - webtune lab forum</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font-family: Verdana, Helvetica, Arial, sans-serif; font-size: 11px; color: #536482; background: #f5f7fa; margin: 0; padding: 12px; }
a { color: #105289; text-decoration: none; } a:hover { color: #d31141; text-decoration: underline; }
#wrap { max-width: 1152px; margin: 0 auto; background: #fff; border: 1px solid #e6e9ed; border-radius: 8px; padding: 15px; }
.headerbar { background: linear-gradient(#6aceff, #0076b1 2px, #12a3eb 92px, #12a3eb 100%); color: #fff; border-radius: 7px; padding: 8px 12px; margin-bottom: 4px; }
.headerbar h1 { font-family: "Trebuchet MS", Arial, sans-serif; font-size: 20px; margin: 6px 0; }
.navbar { background: #cadceb; border-radius: 7px; padding: 4px 10px; margin-bottom: 8px; }
.forabg, .forumbg { background: #0076b1; border-radius: 7px; padding: 5px; margin-bottom: 8px; clear: both; }
table.list { width: 100%; border-collapse: collapse; background: #fff; }
table.list th { color: #fff; text-align: left; padding: 4px 6px; font-size: 10px; text-transform: uppercase; }
table.list td { border-top: 1px solid #fff; padding: 6px; vertical-align: top; background: #ecf3f7; }
table.list tr.bg2 td { background: #e1ebf2; }
.forumtitle, .topictitle { font-family: "Trebuchet MS", Helvetica, Arial, sans-serif; font-size: 13px; font-weight: bold; }
.pagination { float: right; margin: 6px 0; } .pagination ul { display: inline; padding: 0; }
.pagination li { display: inline; list-style: none; margin-left: 2px; } .pagination li.active span { background: #4692bf; color: #fff; padding: 2px 5px; }
.post { background: #ecf3f7; border-radius: 7px; padding: 6px 10px; margin-bottom: 4px; overflow: hidden; }
.post.bg2 { background: #e1ebf2; }
.postbody { float: left; width: 76%; } .postprofile { float: right; width: 22%; border-left: 1px solid #fff; padding-left: 8px; min-height: 80px; }
.postbody h3 { font-size: 15px; margin: 2px 0 6px; } .content { font-family: "Lucida Grande", "Trebuchet MS", Verdana, sans-serif; font-size: 13px; line-height: 1.4em; color: #333; }
blockquote { background: #ebeadd; border: 1px solid #dbdbce; margin: 10px 1px 10px 25px; padding: 5px; }
.signature { border-top: 1px solid #ccc; margin-top: 12px; padding-top: 4px; font-size: 11px; }
.stat-block { margin-top: 12px; border-top: 1px solid #ccc; padding-top: 6px; }
.copyright { text-align: center; padding: 10px; color: #555; }
</style>
</head>
<body id="phpbb" class="section-forum ltr">
<div id="wrap">
<div class="headerbar" role="banner">
<h1><a href="/index.php" style="color:#fff">webtune lab forum</a></h1>
<p>A board of generated posts, in the shape of seed 003&#39;s phpBB forum.</p>
</div>
<div class="navbar" role="navigation">
<ul class="linklist"><li><a href="/faq.php">FAQ</a></li><li><a href="/search.php">Search</a></li><li><a href="/memberlist.php">Members</a></li>' . $account . '</ul>
<p class="breadcrumbs">' . $nav . '</p>
</div>
<main id="page-body" role="main">
' . $content . '
</main>
<div class="copyright">Powered by webtune lab · all times are UTC</div>
</div>
<!-- webtune-forum-page-complete -->
</body>
</html>
';
}

/** Send a page, or a 404 / 503 error page (which carries no completion marker). */
function forum_run(callable $page): void
{
    try {
        $html = $page();
        header('Content-Type: text/html; charset=utf-8');
        header('Cache-Control: no-store');
        echo $html;
    } catch (NotFound $e) {
        error_page(404, 'Not Found', 'The requested forum, topic or page does not exist.');
    } catch (Forbidden $e) {
        error_page(403, 'Forbidden', $e->getMessage());
    } catch (BadRequest $e) {
        error_page(400, 'Bad Request', $e->getMessage());
    } catch (mysqli_sql_exception $e) {
        // "WARNING:" marks the line as a warning for the lab's log reader: mod_php writes
        // error_log() lines at notice level, which it would skip.
        error_log('WARNING: webtune forum: database error: ' . $e->getMessage());
        error_page(503, 'Service Unavailable', 'The database is not available.');
    }
}

function error_page(int $status, string $reason, string $message): void
{
    http_response_code($status);
    header('Content-Type: text/html; charset=utf-8');
    header('Cache-Control: no-store');
    echo '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>' . $status . ' ' . h($reason)
        . '</title></head><body><h1>' . $status . ' ' . h($reason) . '</h1><p>' . h($message)
        . '</p><p><a href="/index.php">Board index</a></p></body></html>';
}
