/*
 * peak_rss: runs a command and writes its peak resident set size in KiB (the kernel's
 * ru_maxrss of that child, from wait4) to a file, for tests that bound a command's memory
 * without timing it.
 *
 * usage: peak_rss KIB_FILE COMMAND [ARG...]
 * Exits with the command's exit status (128 + signal when a signal ended it), 125 when it
 * could not be run.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: peak_rss KIB_FILE COMMAND [ARG...]\n");
        return 125;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("peak_rss: fork");
        return 125;
    }
    if (pid == 0) {
        execvp(argv[2], &argv[2]);
        perror("peak_rss: exec");
        _exit(125);
    }
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) != pid) {
        perror("peak_rss: wait4");
        return 125;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f || fprintf(f, "%ld\n", ru.ru_maxrss) < 0 || fclose(f) != 0) {
        perror(argv[1]);
        return 125;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
