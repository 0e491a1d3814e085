#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/syscall.h>
static volatile sig_atomic_t got;
static volatile pid_t ttid;
static void on_chld(int s){ (void)s; got=1; }
static void *t(void *a){ (void)a; sigset_t m; sigemptyset(&m); sigaddset(&m,SIGCHLD); pthread_sigmask(SIG_UNBLOCK,&m,0); ttid=syscall(SYS_gettid); for(;;) pause(); return 0; }
int main(int c, char **v){
  signal(SIGCHLD,on_chld);
  sigset_t m; sigemptyset(&m); sigaddset(&m,SIGCHLD); pthread_sigmask(SIG_BLOCK,&m,0);
  pthread_t th; pthread_create(&th,0,t,0);
  while(!ttid) usleep(1000);
  while(access(v[1],F_OK)) usleep(10000);
  pid_t ch=fork(); if(!ch) _exit(0);
  while(!got) usleep(1000);
  waitpid(ch,0,0);
  FILE *f=fopen(v[2],"w"); fprintf(f,"%d %d %d\n",getpid(),ttid,ch); fclose(f);
  return 0;
}
